# The one image of the webhook, the sweeper and the relay, with the relay's
# web console, for those who build with Docker, for the builder's platform.
# `make image` is how the project builds and tests its images: the same
# binary onto an empty base, for linux/amd64 and linux/arm64 as one index
# with an SBOM, without a Docker engine (docs/operators.md).

# The console: its part of the npm workspace from the workspace's lockfile
# (npm ci -w installs the console and what it depends on), bundled by
# esbuild into relay/console/dist, which the binary embeds (as `make
# console` does).
FROM node:22-bookworm-slim AS console
WORKDIR /src
COPY backstage/ backstage/
RUN cd backstage && npm ci --ignore-scripts --no-audit --no-fund -w packages/console
RUN mkdir -p relay/console/dist && cd backstage/packages/console && node build.mjs

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=console /src/relay/console/dist/ relay/console/dist/
RUN test -f relay/console/dist/index.html && CGO_ENABLED=0 go build -trimpath -o /breakglass ./cmd/breakglass

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /breakglass /breakglass
USER 65532:65532
ENTRYPOINT ["/breakglass"]
