# The one image of the webhook, the sweeper and the relay, for those who
# build with Docker. `make image` builds the same without a Docker engine.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /breakglass ./cmd/breakglass

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /breakglass /breakglass
USER 65532:65532
ENTRYPOINT ["/breakglass"]
