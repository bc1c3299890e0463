# breakglass: `make dev` runs the plane locally; `make test` checks a change; `make test-release`
# what a release checks beyond it (CI runs both where its time allows: .ci/run).
SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin
GO ?= go
KUBE_VERSION := v1.37.2
# The oldest Kubernetes the chart claims (Chart.yaml's kubeVersion): the
# policies are installed and type-checked on it too (test/oldest).
OLDEST_KUBE_VERSION := v1.30.14
OLDEST_BINS := $(BIN)/kube-apiserver-1.30 $(BIN)/kube-controller-manager-1.30
ETCD_VERSION := v3.6.16
# Every Kubernetes the chart claims, oldest to newest: the policies are
# type-checked against each one's own OpenAPI documents (bin/openapi).
CLAIMED_KUBE_VERSIONS := $(OLDEST_KUBE_VERSION) v1.31.14 v1.32.13 v1.33.13 v1.34.4 v1.35.4 v1.36.3 $(KUBE_VERSION)
OPENAPI_SPECS := $(foreach v,$(CLAIMED_KUBE_VERSIONS),$(BIN)/openapi/$(v)/api__v1_openapi.json)
# The real node's programs (make node), built from the same module as kube-apiserver.
KUBE_NODE_BINS := $(BIN)/kubelet $(BIN)/kube-controller-manager $(BIN)/kube-scheduler
CONTAINERD_BINS := $(BIN)/containerd $(BIN)/containerd-shim-runc-v2
NODE_BINS := $(KUBE_NODE_BINS) $(BIN)/kube-proxy $(BIN)/coredns $(CONTAINERD_BINS)

export KUBEBUILDER_ASSETS := $(BIN)
comma := ,
space := $(subst ,, )

# The external tools are built once per machine into TOOLS_CACHE, keyed by
# their module's files, and linked into bin/ from there: a new clone reuses
# them (hack/tool-cache.sh). rm -rf it to build everything again.
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/breakglass/tools
export TOOLS_CACHE
# $(call cached,MODULE_DIR,OUTPUTS,COMMAND): COMMAND writes OUTPUTS into $$OUT.
cached = GO=$(GO) bash hack/tool-cache.sh $(1) $(BIN) '$(2)' '$(3)'

.PHONY: test-release test-createapp test-images release-tools release-tools-cached print-release-checks help all build backstage browser openapi-specs test-oldest test-kyverno test-integration-main cross test-cross krew console node dev image rekor debian-packages test test-unit test-integration test-faults fuzz bench bench-load generate verify-generate lint tools clean

## all: build (the default target).
all: build

## help: these lines: what each target does.
help:
	@grep -h '^## ' $(MAKEFILE_LIST) | sed 's/^## //'

# VERSION is the plugin's release (kubectl breakglass version; krew's semver).
VERSION ?= v0.0.0-dev

# cross: the kubectl plugin builds for every platform people run it on
# (it links nothing Linux-only; make dev's test bed is bin/breakglass-dev).
# make test-release builds all six (CROSS_PLATFORMS=... overrides).
CROSS_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
## cross: the kubectl plugin for Linux, macOS and Windows on amd64 and arm64 (bin/cross/).
cross: console
	@set -e; for p in $(CROSS_PLATFORMS); do \
		echo ">> kubectl-breakglass for $$p"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN)/cross/$${p%/*}-$${p#*/}/kubectl-breakglass$$( [ $${p%/*} = windows ] && echo .exe ) ./cmd/kubectl-breakglass; \
	done

# krew: the archives of every platform and the krew plugin manifest for them
# (bin/krew/breakglass.yaml), for a release at VERSION.
## krew: the krew plugin manifest and archives for a release at VERSION.
krew: cross
	@mkdir -p $(BIN)/krew
	@set -e; for p in $(CROSS_PLATFORMS); do \
		d=$(BIN)/cross/$${p%/*}-$${p#*/}; \
		tar -czf $(BIN)/krew/kubectl-breakglass_$${p%/*}_$${p#*/}.tar.gz -C $$d .; \
	done
	$(GO) run ./hack/krew --version $(VERSION) -o $(BIN)/krew/breakglass.yaml $(BIN)/krew/*.tar.gz
	@echo ">> $(BIN)/krew/breakglass.yaml"

# The npm workspace (backstage/): both front ends, the relay's console
# (packages/console) and Tower's Backstage plugins (plugins/), over one
# source for what they show (packages/portal) and one terminal and player
# (packages/terminal), with the demo Backstage app. Node.js 22 from the npm
# registry (Backstage needs 22 or 24; Debian has 20); the packages from the
# workspace's lockfile, with no install scripts (nothing native is built).
WORKSPACE := backstage
NODE22 := $(BIN)/node22/bin/node
BACKSTAGE_PATH := PATH=$(BIN)/node22/bin:$$PATH
# touch: the tarball's files keep their old times, which would make the
# download look stale at every make.
$(NODE22): hack/node22.sh
	bash hack/node22.sh $(BIN)
	touch $@
WORKSPACE_MANIFESTS := $(WORKSPACE)/package.json $(WORKSPACE)/package-lock.json $(wildcard $(WORKSPACE)/packages/*/package.json $(WORKSPACE)/plugins/*/package.json)
# What is installed is stamped outside node_modules, which npm ci replaces:
# the whole workspace's install (make backstage, beside the suites under
# make test) must not make the console's look missing, and so rebuilt
# into a node_modules being written.
INSTALLED_ALL := $(BIN)/workspace/installed-all
INSTALLED_CONSOLE := $(BIN)/workspace/installed-console
# The whole workspace, for make backstage.
$(INSTALLED_ALL): $(NODE22) $(WORKSPACE_MANIFESTS)
	cd $(WORKSPACE) && $(BACKSTAGE_PATH) npm ci --ignore-scripts --no-audit --no-fund
	@mkdir -p $(@D) && touch $@
# The console's part alone (npm ci -w installs one workspace and what it
# depends on), so that building the relay needs no Backstage; where the
# whole workspace is installed and current, that serves.
$(INSTALLED_CONSOLE): $(NODE22) $(WORKSPACE_MANIFESTS)
	@if [ -f $(INSTALLED_ALL) ] && [ -d $(WORKSPACE)/node_modules ] && [ -z "$$(find $(WORKSPACE_MANIFESTS) -newer $(INSTALLED_ALL))" ]; then \
		echo ">> the console's packages: the whole workspace is installed"; \
	else \
		cd $(WORKSPACE) && $(BACKSTAGE_PATH) npm ci --ignore-scripts --no-audit --no-fund -w packages/console; \
	fi
	@mkdir -p $(@D) && touch $@

# The web console: bundled by esbuild into relay/console/dist, which the
# relay's binary embeds (go:embed).
CONSOLE_SRC := $(WORKSPACE)/packages/console/build.mjs $(wildcard $(WORKSPACE)/packages/console/src/*.ts $(WORKSPACE)/packages/console/src/*/*.ts \
	$(WORKSPACE)/packages/console/src/*.css $(WORKSPACE)/packages/portal/src/*.ts $(WORKSPACE)/packages/terminal/src/*.js)
## console: the web console (the workspace's console packages, bundled by esbuild into relay/console/dist).
console: relay/console/dist/index.html
relay/console/dist/index.html: $(INSTALLED_CONSOLE) $(CONSOLE_SRC)
	cd $(WORKSPACE)/packages/console && $(BACKSTAGE_PATH) node build.mjs

# Tower's Backstage plugins and both front ends checked: the portal's API
# types written from relay/openapi.yaml (openapi-typescript), one type check
# of the whole workspace (the console's code and the plugins' alike), the
# portal and the three plugins built as the npm packages they are published
# as, and the demo app built with Backstage's CLI (the demo backend serves it).
## backstage: both front ends type-checked, Tower's Backstage plugins and the demo app built (Node.js 22 in bin/node22).
backstage: $(INSTALLED_ALL)
	cd $(WORKSPACE)/packages/portal && $(BACKSTAGE_PATH) npm run --silent generate
	cd $(WORKSPACE) && $(BACKSTAGE_PATH) node_modules/.bin/tsc -p . --noEmit false --declaration --emitDeclarationOnly --outDir dist-types
	@set -e; for p in packages/portal plugins/breakglass-common plugins/breakglass-backend plugins/breakglass; do \
		(cd $(WORKSPACE)/$$p && $(BACKSTAGE_PATH) $(CURDIR)/$(WORKSPACE)/node_modules/.bin/backstage-cli package build); \
	done
	cd $(WORKSPACE)/packages/app && $(BACKSTAGE_PATH) ../../node_modules/.bin/backstage-cli package build --config ../../app-config.yaml

## build: the server (bin/breakglass) and the plugin (bin/kubectl-breakglass).
build: console
	$(GO) build ./...
	$(GO) build -o $(BIN)/kubectl-breakglass ./cmd/kubectl-breakglass
	$(GO) build -o $(BIN)/breakglass ./cmd/breakglass

## openapi-specs: the OpenAPI documents of every Kubernetes the chart claims (bin/openapi), from each one's module.
openapi-specs: $(OPENAPI_SPECS)
$(OPENAPI_SPECS) &: hack/openapi-specs.sh
	GO=$(GO) bash hack/openapi-specs.sh $(BIN)/openapi $(CLAIMED_KUBE_VERSIONS)

## tools: build the external programs the tests and generators use, once, into bin/.
tools: $(BIN)/kube-apiserver $(NODE_BINS) $(OLDEST_BINS) $(BIN)/etcd $(BIN)/versitygw $(BIN)/controller-gen $(BIN)/golangci-lint $(BIN)/promtool $(BIN)/cosign $(BIN)/rekor-server-v2 $(BIN)/kubectl-kyverno rekor

KUBE_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37 \
	-X k8s.io/component-base/version.gitTreeState=clean

$(BIN)/kube-apiserver: tools/apiserver/go.mod tools/apiserver/go.sum
	@echo ">> kube-apiserver $(KUBE_VERSION) from module sources (about 18 CPU-minutes the first time on a machine: 10 on 2 cores)"
	$(call cached,tools/apiserver,kube-apiserver,$(GO) build -o "$$OUT/" -ldflags "$(KUBE_LDFLAGS)" k8s.io/kubernetes/cmd/kube-apiserver)

# The oldest claimed kube-apiserver, and the controller manager whose
# status controller writes each policy's status.typeChecking.
$(OLDEST_BINS) &: tools/apiserver130/go.mod tools/apiserver130/go.sum
	@echo ">> kube-apiserver and kube-controller-manager $(OLDEST_KUBE_VERSION) from module sources (about 18 CPU-minutes the first time: 9 on 2 cores)"
	$(call cached,tools/apiserver130,$(notdir $(OLDEST_BINS)),$(foreach c,kube-apiserver kube-controller-manager,$(GO) build -o "$$OUT/$(c)-1.30" \
		-ldflags "$(subst $(KUBE_VERSION),$(OLDEST_KUBE_VERSION),$(subst gitMinor=37,gitMinor=30,$(KUBE_LDFLAGS)))" k8s.io/kubernetes/cmd/$(c) &&) true)

# The real node: a kubelet on containerd 2 and Debian's runc, the controllers
# and scheduler that turn the chart's Deployments into pods on it, and
# kube-proxy and CoreDNS for its Services and their names.
## node: the real node's kubelet, controllers, scheduler, kube-proxy, CoreDNS and containerd, from module sources.
node: $(NODE_BINS)
$(KUBE_NODE_BINS) &: tools/apiserver/go.mod tools/apiserver/go.sum
	@echo ">> kubelet, kube-controller-manager and kube-scheduler $(KUBE_VERSION) from module sources (about 7 CPU-minutes the first time, after kube-apiserver)"
	$(call cached,tools/apiserver,kubelet kube-controller-manager kube-scheduler,$(GO) build -o "$$OUT/" -ldflags "$(KUBE_LDFLAGS)" \
		k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)

$(BIN)/kube-proxy: tools/kubeproxy/go.mod tools/kubeproxy/go.sum
	@echo ">> kube-proxy $(KUBE_VERSION) from module sources"
	$(call cached,tools/kubeproxy,kube-proxy,$(GO) build -o "$$OUT/" -ldflags "$(KUBE_LDFLAGS)" k8s.io/kubernetes/cmd/kube-proxy)

# containerd 2 (image volumes, which held copies mount) and its runc shim,
# static; runc itself is Debian's.
$(CONTAINERD_BINS) &: tools/containerd/go.mod tools/containerd/go.sum
	@echo ">> containerd and its runc shim from module sources"
	$(call cached,tools/containerd,containerd containerd-shim-runc-v2,CGO_ENABLED=0 $(GO) build -tags "urfave_cli_no_docs no_btrfs" -o "$$OUT/" \
		github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2)

$(BIN)/coredns: tools/coredns/go.mod tools/coredns/go.sum tools/coredns/main.go
	@echo ">> CoreDNS from module sources, with the plugins the real node uses"
	$(call cached,tools/coredns,coredns,$(GO) build -o "$$OUT/coredns" .)

$(BIN)/etcd: tools/etcd/go.mod tools/etcd/go.sum tools/etcd/main.go
	@echo ">> etcd $(ETCD_VERSION) from module sources"
	$(call cached,tools/etcd,etcd,$(GO) build -o "$$OUT/etcd" .)

# versitygw: an S3 server that enforces Object Lock, for the evidence store's tests.
$(BIN)/versitygw: tools/versitygw/go.mod tools/versitygw/go.sum
	@echo ">> versitygw from module sources"
	$(call cached,tools/versitygw,versitygw,$(GO) build -o "$$OUT/" github.com/versity/versitygw/cmd/versitygw)

# Rekor on Trillian (PostgreSQL comes from Debian): the transparency log recordings are anchored in.
REKOR_BINS := $(BIN)/rekor-server $(BIN)/rekor-cli $(BIN)/trillian_log_server $(BIN)/trillian_log_signer $(BIN)/createtree
## rekor: Rekor and Trillian from module sources (PostgreSQL comes from Debian).
rekor: $(REKOR_BINS)
$(REKOR_BINS) &: tools/rekor/go.mod tools/rekor/go.sum
	@echo ">> rekor-server, rekor-cli and Trillian from module sources (about 10 CPU-minutes the first time: 5 on 2 cores)"
	$(call cached,tools/rekor,$(notdir $(REKOR_BINS)),$(GO) build -o "$$OUT/" github.com/sigstore/rekor/cmd/rekor-server github.com/sigstore/rekor/cmd/rekor-cli \
		github.com/google/trillian/cmd/trillian_log_server github.com/google/trillian/cmd/trillian_log_signer github.com/google/trillian/cmd/createtree)

# Rekor v2 (rekor-tiles on Tessera's POSIX storage): the tile-based log recordings can be anchored in instead.
$(BIN)/rekor-server-v2: tools/rekortiles/go.mod tools/rekortiles/go.sum
	@echo ">> Rekor v2 (rekor-tiles) from module sources"
	$(call cached,tools/rekortiles,rekor-server-v2,$(GO) build -o "$$OUT/rekor-server-v2" github.com/sigstore/rekor-tiles/v2/cmd/rekor-server/posix)

# Kyverno's CLI: the tests run what `policy render --kyverno` emits through it (about 17 CPU-minutes the first time: 9 on 2 cores).
$(BIN)/kubectl-kyverno: tools/kyverno/go.mod tools/kyverno/go.sum
	@echo ">> Kyverno's CLI from module sources"
	$(call cached,tools/kyverno,kubectl-kyverno,$(GO) build -o "$$OUT/" github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno)

# The stock cosign CLI: tests sign debug images with it and verify recordings' bundles as a reviewer would.
$(BIN)/cosign: tools/cosign/go.mod tools/cosign/go.sum
	@echo ">> cosign from module sources"
	$(call cached,tools/cosign,cosign,$(GO) build -o "$$OUT/" github.com/sigstore/cosign/v3/cmd/cosign)

# promtool: Prometheus' rule tester, for the chart's alerts (test/sweeper TestAlertRules).
# Without the service discoveries (remove_all_sd, Prometheus' own tag): the
# rule tests need none, and the cloud SDKs were most of its first build.
$(BIN)/promtool: tools/promtool/go.mod tools/promtool/go.sum
	@echo ">> promtool from module sources"
	$(call cached,tools/promtool,promtool,$(GO) build -tags remove_all_sd -o "$$OUT/" github.com/prometheus/prometheus/cmd/promtool)

$(BIN)/controller-gen: tools/dev/go.mod tools/dev/go.sum
	$(call cached,tools/dev,controller-gen,$(GO) build -o "$$OUT/" sigs.k8s.io/controller-tools/cmd/controller-gen)

$(BIN)/golangci-lint: tools/dev/go.mod tools/dev/go.sum
	@echo ">> golangci-lint"
	$(call cached,tools/dev,golangci-lint,$(GO) build -o "$$OUT/" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)

## generate: deepcopy, CRDs, docs/api.md, the portals' vocabulary and Session schema, and the chart's generated manifests.
generate: $(BIN)/controller-gen
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(BIN)/controller-gen crd:crdVersions=v1 paths=./api/... output:crd:artifacts:config=charts/breakglass/crds
	$(GO) run ./hack/apidocs -crds charts/breakglass/crds -o docs/api.md
	$(GO) run ./hack/policydocs -f docs/policies.md
	$(GO) run ./hack/portalgen
	$(GO) run ./cmd/kubectl-breakglass policy generate --chart charts/breakglass

## verify-generate: fail if a generated file is not what `make generate` writes.
GENERATED := api charts docs/api.md docs/policies.md relay/openapi-session.yaml backstage/packages/portal/src/vocabulary.gen.ts
verify-generate: generate
	@git diff --exit-code -- $(GENERATED) || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- $(GENERATED))" || { git status --porcelain -- $(GENERATED); echo "generated files are not committed"; exit 1; }

## dev: the whole plane on this machine (bin/breakglass-dev); Ctrl-C stops it.
## make dev DEV_FLAGS=--rekor also runs Rekor (make rekor first) and anchors every recording;
## DEV_FLAGS=--backstage also runs Backstage with Tower's plugins in front of the relay;
## DEV_FLAGS=--real-node runs pods on a kubelet with containerd and runc (make node; root).
dev: console $(BIN)/kube-apiserver $(BIN)/etcd $(if $(findstring --real-node,$(DEV_FLAGS)),$(NODE_BINS)) $(if $(findstring --backstage,$(DEV_FLAGS)),backstage)
	$(GO) build -o $(BIN)/kubectl-breakglass ./cmd/kubectl-breakglass
	$(GO) build -o $(BIN)/breakglass-dev ./cmd/breakglass-dev
	$(BIN)/breakglass-dev $(DEV_FLAGS)

## image: the server and debug images, each one OCI index for linux/amd64 and linux/arm64 with a CycloneDX
## SBOM attached, in an OCI layout (bin/images), no Docker engine needed; IMAGE_PUSH=REGISTRY/PREFIX pushes them.
IMAGE_ARCHES := amd64 arm64
IMAGE_VERSION ?= dev
# make test builds the server image for this machine's architecture only
# (each other one is the whole server cross-compiled); the debug image's
# are Debian's busybox, and every one is built.
SERVER_ARCHES ?= $(IMAGE_ARCHES)
image: console $(foreach a,$(IMAGE_ARCHES),$(BIN)/busybox-$(a)/busybox)
	@set -e; for a in $(SERVER_ARCHES); do \
		echo ">> breakglass for linux/$$a"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -o $(BIN)/linux-$$a/breakglass ./cmd/breakglass; \
	done
	$(GO) run ./internal/image/build -o $(BIN)/images -version $(IMAGE_VERSION) $(if $(IMAGE_PUSH),-push $(IMAGE_PUSH)) \
		-server-arches $(subst $(space),$(comma),$(strip $(SERVER_ARCHES))) $(foreach a,$(SERVER_ARCHES),-server $(a)=$(BIN)/linux-$(a)/breakglass) \
		$(foreach a,$(IMAGE_ARCHES),-busybox $(a)=$(BIN)/busybox-$(a)/busybox -busybox-version $(a)=$$(cat $(BIN)/busybox-$(a)/version))
$(BIN)/busybox-%/busybox:
	bash hack/busybox.sh $* $(BIN)/busybox-$*

## lint: gofmt, go vet and golangci-lint.
lint: $(BIN)/golangci-lint
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(BIN)/golangci-lint run --allow-parallel-runners ./...

# Unit tests; -race where goroutines meet (the sweeper's controllers, the webhook's cache, the relay's
# sessions and replicas).
## test-unit: the unit tests (no tool needed but the console), -race on the concurrent packages.
test-unit: console
	$(GO) test $$($(GO) list ./... | grep -v /test/) ./test/harness/prereq/ ./test/harness/measure/
	$(GO) test -race ./sweeper/... ./webhook/... ./relay/...

# Run by hand, a suite whose tools are missing runs nothing and says which
# target builds them (test/harness/prereq); under these targets, which build them
# all, a missing one fails it instead.
test-unit test-integration test-integration-main test-kyverno test-oldest test-faults fuzz bench bench-load: export BREAKGLASS_REQUIRE_TOOLS := 1

## browser: the browser tests' npm packages (playwright-core, xterm.js); Chromium comes from Debian.
browser: test/browser/node_modules/.package-lock.json
test/browser/node_modules/.package-lock.json: test/browser/package.json test/browser/package-lock.json
	cd test/browser && npm ci --no-audit --no-fund

INTEGRATION_DEPS := console image $(OPENAPI_SPECS) $(BIN)/kube-apiserver $(NODE_BINS) $(BIN)/etcd $(BIN)/versitygw $(BIN)/promtool $(BIN)/cosign $(BIN)/rekor-server-v2 rekor browser backstage

## test-integration: every suite on the real API server, node, store, log and browser (not the faults).
test-integration: test-integration-main test-kyverno test-oldest

## test-integration-main: the suites on the real parts, without Kyverno's CLI and the oldest Kubernetes;
## the sweeper's, the cluster harness's, the debug runner's and the relay's with -race.
test-integration-main: $(INTEGRATION_DEPS)
	$(GO) test -count=1 -timeout 20m -skip '^TestFault' ./test/integration/... ./test/evidence/... ./test/tlog/...
	$(GO) test -count=1 -timeout 20m -race -skip '^TestFault' ./test/sweeper/... ./test/harness/cluster/... ./test/debugsession/... ./test/relay/...
	$(GO) test -count=1 -timeout 20m -skip '^TestFault' ./test/webhook/... ./test/chart/... ./test/dev/... ./test/console/... ./test/backstage/...

## test-kyverno: what `policy render --kyverno` emits, run through Kyverno's CLI.
test-kyverno: $(BIN)/kubectl-kyverno $(BIN)/cosign
	$(GO) test -count=1 -timeout 10m ./test/kyverno/...

## test-oldest: the policies type-checked by v1.30's own controller manager, and the policy-plane suite on v1.30.
test-oldest: $(OLDEST_BINS) $(BIN)/etcd $(OPENAPI_SPECS)
	$(GO) test -count=1 -timeout 10m ./test/oldest/
	BREAKGLASS_APISERVER=$(BIN)/kube-apiserver-1.30 $(GO) test -count=1 -timeout 20m ./test/integration/

## test-faults: the fault suite (every TestFault*, on the real parts): relay
## killed, replicas handing over, kube-apiserver restarted, webhook down,
## store down and disk full, Rekor down, sweeper leader gone, viewer cut.
test-faults: $(INTEGRATION_DEPS)
	$(GO) test -count=1 -timeout 20m -run '^TestFault' ./test/tlog/... ./test/webhook/...
	$(GO) test -count=1 -timeout 20m -race -run '^TestFault' ./test/sweeper/... ./test/debugsession/... ./test/relay/...

# Fuzz targets over everything that parses input from outside, each for
# FUZZTIME; their seed corpora (and any crash found, kept as a regression
# case) are in testdata/fuzz/ and run with the unit tests too.
FUZZTIME ?= 30s
FUZZ_TARGETS := relay/terminal:FuzzParseControl relay/terminal:FuzzFrames \
	evidence/recording:FuzzPlay evidence/recording:FuzzRecordThenPlay evidence/recording:FuzzCommands evidence/recording:FuzzSearch evidence/recording:FuzzReadTranscript evidence/recording:FuzzParseManifest \
	evidence/audit:FuzzVerify evidence/tlog:FuzzBundle evidence/tlog:FuzzSigstoreBundle vap:FuzzCaseFile vap:FuzzCopyAndDebug \
	relay/api:FuzzRequestBody relay:FuzzTokenClaims relay:FuzzConfig webhook:FuzzConfig
## fuzz: each fuzz target for FUZZTIME (30s).
fuzz: console
	GO=$(GO) bash hack/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

## debian-packages: PostgreSQL, Chromium, Node, jq, OpenSSL, busybox-static, runc, CNI plugins and iptables from Debian, where missing.
debian-packages:
	bash hack/debian-packages.sh

## test: a change's check: generated files, lint, unit tests, every integration suite and the faults.
# It runs everything that checks the product's behaviour on its real parts;
# what checks a release rather than a change is make test-release's (below).
# The generated files are checked first, alone, since generate rewrites
# sources the rest compile. Then, under make -j2, two chains run side by
# side: the suites one at a time in TEST_SUITES' order, and the builds one
# at a time in TEST_BUILDS' order, the tools the earlier suites need first
# (niced, hack/tool-cache.sh). On a machine's first run the builds so
# overlap the suites that need none of them; a later run has nothing to
# build. Each fuzz target's seed corpus and saved regressions run with the
# unit tests.
TEST_SUITES := lint test-unit test-integration-main test-faults
TEST_BUILDS := $(BIN)/golangci-lint $(BIN)/kube-apiserver $(BIN)/etcd OPENAPI_SPECS $(BIN)/versitygw \
	KUBE_NODE_BINS $(BIN)/kube-proxy CONTAINERD_BINS $(BIN)/coredns $(BIN)/promtool $(BIN)/cosign REKOR_BINS \
	$(BIN)/rekor-server-v2 browser backstage image
# What make test leaves to make test-release, named when it passes, so
# that nothing is skipped without a word.
RELEASE_CHECKS = $(words $(FUZZ_TARGETS)) fuzz targets for $(FUZZTIME) each; the plugin for every platform; the server \
	image for arm64; Kyverno's CLI; the live run on kube-apiserver $(OLDEST_KUBE_VERSION); Tower in a new create-app app
test: debian-packages
	$(MAKE) console verify-generate
	$(MAKE) -j2 IN_ORDER=test SERVER_ARCHES=$$($(GO) env GOARCH) $(TEST_SUITES)
	@echo ">> make test passed: generated files, lint, unit tests (with each fuzz target's seed corpus), every integration suite, the faults."
	@echo ">> Not run by make test, a release's checks (make test-release): $(RELEASE_CHECKS)."

## test-release: what a release checks beyond make test (about 30 minutes once its tools are built; docs/benchmarks.md):
## new inputs for each fuzz target, the plugin for every platform, both images for both architectures, Kyverno's CLI
## over the rendered policies, the plane live on the oldest claimed Kubernetes, and Tower installed as
## docs/backstage.md says in a new Backstage app. Its suites and its two tools' builds run side by side, as make test's.
RELEASE_SUITES := fuzz cross test-images test-kyverno test-oldest test-createapp
RELEASE_BUILDS := $(BIN)/kubectl-kyverno OLDEST_BINS
test-release: debian-packages
	$(MAKE) -j2 IN_ORDER=release $(RELEASE_SUITES)
	@echo ">> make test-release passed: $(RELEASE_CHECKS)."

## test-images: both images for every architecture, as a release pushes
## them (the build refuses an architecture it lacks a binary for).
test-images: image

# Under make test and make test-release, each suite and each build waits
# for the one before it in its chain: an order-only prerequisite, so it
# neither starts early nor counts as out of date. (make -j2 alone would
# fill both slots with builds and leave the next suite waiting.) A chain's
# word that names a variable stands for the targets built together that it
# holds.
targets_of = $(if $(filter undefined,$(origin $(1))),$(1),$($(1)))
in_order = $(if $(word 2,$(1)),$(eval $(call targets_of,$(word 2,$(1))): | $(call targets_of,$(word 1,$(1))))$(call in_order,$(wordlist 2,$(words $(1)),$(1))))
ifeq ($(IN_ORDER),test)
$(call in_order,$(TEST_SUITES))
$(call in_order,$(TEST_BUILDS))
endif
ifeq ($(IN_ORDER),release)
$(call in_order,$(RELEASE_SUITES))
$(call in_order,$(RELEASE_BUILDS))
endif

## test-createapp: docs/backstage.md's Install section followed in a new @backstage/create-app app with Tower's
## packages as npm pack makes them (5 to 8 minutes, 3.5 GB).
test-createapp: backstage
	BREAKGLASS_RELEASE=1 $(GO) test -count=1 -timeout 45m -v ./test/createapp/

## print-release-checks: what make test leaves to make test-release (.ci/run names them when it runs only make test).
print-release-checks:
	@echo "$(RELEASE_CHECKS)"

## release-tools: make test-release's own tools, built (.ci/run builds them for a later run when only that fits).
release-tools: $(BIN)/kubectl-kyverno $(OLDEST_BINS)

## release-tools-cached: succeeds if make test-release's own tools are in the tool cache (.ci/run asks).
release-tools-cached:
	@$(MAKE) -s -B TOOL_CACHE_PROBE=1 $(BIN)/kubectl-kyverno $(firstword $(OLDEST_BINS)) >/dev/null

## bench: the benchmarks docs/benchmarks.md reports.
bench: debian-packages $(BIN)/kube-apiserver $(BIN)/etcd $(NODE_BINS) browser backstage
	$(GO) test -run '^$$' -bench . -benchmem ./vap/...
	$(GO) test -run '^$$' -bench 'EphemeralContainerPatch$$' -benchtime 500x ./test/integration/...
	$(GO) test -run '^$$' -bench EphemeralContainerPatchOneServer -benchtime 600x ./test/integration/...
	$(GO) test -run '^$$' -bench OrdinaryWork -benchtime 1000x ./test/integration/...
	$(GO) test -run '^$$' -bench . -benchtime 1x ./test/sweeper/...
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./test/webhook/...
	$(GO) test -run '^$$' -bench KeystrokeEcho -benchtime 1000x ./test/debugsession/...
	$(GO) test -run '^$$' -bench IdleSessionAttached -benchtime 1x ./test/debugsession/...
	$(GO) test -run '^$$' -bench AttachStream -benchtime 1000x ./test/debugsession/...
	$(GO) test -run '^$$' -bench 'TimeToShell$$' -benchtime 3x ./test/debugsession/...
	$(GO) test -run '^$$' -bench TimeToShellRealNode -benchtime 2x -timeout 30m ./test/debugsession/...
	$(GO) test -run '^$$' -bench . -benchtime 2s ./relay/debugsession/...
	$(GO) test -run '^$$' -bench ApproveToPrompt -benchtime 1x -timeout 20m ./test/backstage/...
	$(MAKE) bench-load

## bench-load: LOAD_SESSIONS (200) attached sessions through a relay in a
## process of its own (docs/benchmarks.md, "Load").
bench-load: $(BIN)/kube-apiserver $(BIN)/etcd
	$(GO) test -run '^$$' -bench RelayLoad -benchtime 1x -timeout 30m ./test/relay/
	$(GO) test -run '^$$' -bench Anchor -benchtime 50x ./test/tlog/...

## clean: remove bin/.
clean:
	rm -rf $(BIN)
