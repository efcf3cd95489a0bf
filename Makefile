# certfn — see README.md. Every target works on a fresh machine with Go installed:
# Go modules are fetched by the go command itself.
GO ?= go
BIN := bin/certfn

.PHONY: print-version build deps test bench demo lint fuzz clean emulators lambda gcp-image install uninstall release provider

# `certfn version` of a build says what it was built from: VERSION (below:
# the last v* tag and git describe's distance from it) and the commit
# (-buildvcs=auto, whatever GOFLAGS says).
build:
	$(GO) build -buildvcs=auto -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/certfn

# System packages the tests need: bind9's named (the RFC2136 DNS-01 tests start
# it on a loopback port), systemd's systemd-analyze (tools/release verifies the
# unit with it), dpkg-deb (tools/release inspects the .deb), jq and shellcheck
# (localstack/e2e.sh builds its api event with jq; its tests run both), Chromium
# (internal/localmode drives the status page in headless Chromium). Installed only
# when missing; needs root (or sudo).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	@pkgs=""; \
	if ! command -v named >/dev/null 2>&1 && [ ! -x /usr/sbin/named ]; then pkgs="$$pkgs bind9 bind9-utils"; fi; \
	if ! command -v systemd-analyze >/dev/null 2>&1; then pkgs="$$pkgs systemd"; fi; \
	if ! command -v dpkg-deb >/dev/null 2>&1; then pkgs="$$pkgs dpkg"; fi; \
	if ! command -v jq >/dev/null 2>&1; then pkgs="$$pkgs jq"; fi; \
	if ! command -v shellcheck >/dev/null 2>&1; then pkgs="$$pkgs shellcheck"; fi; \
	if ! command -v chromium >/dev/null 2>&1; then pkgs="$$pkgs chromium"; fi; \
	if [ -z "$$pkgs" ]; then \
		echo "deps: named, systemd-analyze, dpkg-deb, jq, shellcheck and chromium present"; \
	else \
		$(SUDO) apt-get update && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$pkgs; \
	fi

# The whole test suite (what CI runs).
test: deps emulators
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 15m ./...

# The heavy cloud tests in full: `make test` runs a sample of their flows,
# this target runs them all (CERTFN_TEST_CLOUD=1). tests/lambdarie: the AWS
# functions' zips under the Lambda runtime interface emulator on the
# example applied to moto, and tests/cloudrun: the Cloud Run binary as
# processes on the official emulators; CA and ACME issuances and a renewal (which
# waits about six minutes for a 10-minute certificate's renewal point).
TEST_CLOUD_PKGS ?= ./tests/lambdarie/ ./tests/cloudrun/
.PHONY: test-cloud
test-cloud:
	CERTFN_TEST_CLOUD=1 $(GO) test -count=1 -timeout 30m -v $(TEST_CLOUD_PKGS)

# The AWS emulators the adapter tests start (dynalite, local-aws-sqs), pinned
# by tests/emulators/package-lock.json; reinstalled when the lockfile changes.
emulators: tests/emulators/node_modules/.certfn-installed
tests/emulators/node_modules/.certfn-installed: tests/emulators/package.json tests/emulators/package-lock.json
	cd tests/emulators && npm ci --no-audit --no-fund
	touch $@

# Lambda deployment zips: one `bootstrap` binary per function in
# functions/aws/ for the provided.al2023 runtime, for arm64 and amd64, as
# dist/lambda/<name>-<arch>.zip, plus dist/lambda/<name>.zip = the
# LAMBDA_DEFAULT_ARCH one (arm64: what infra/terraform/aws deploys by
# default). `make lambda GOARCH=amd64` (or GOARCH in the environment)
# builds that architecture only and makes it <name>.zip, the file
# Terraform uploads (set lambda_architecture to match: x86_64 for amd64).
# LAMBDA_FUNCTIONS="api http01" builds only those. Static (CGO_ENABLED=0),
# stripped, without net/rpc (lambda.norpc); zipped by tools/lambdazip (no
# zip tool needed, reproducible output), which is built for this machine
# whatever GOOS and GOARCH say.
LAMBDA_DIR := dist/lambda
LAMBDA_FUNCTIONS ?= $(notdir $(patsubst %/,%,$(wildcard functions/aws/*/)))
LAMBDA_ARCHS ?= $(if $(GOARCH),$(GOARCH),arm64 amd64)
LAMBDA_DEFAULT_ARCH ?= $(if $(GOARCH),$(GOARCH),arm64)
lambda:
	@case " $(LAMBDA_ARCHS) " in *" $(LAMBDA_DEFAULT_ARCH) "*) ;; *) \
		echo "lambda: LAMBDA_DEFAULT_ARCH=$(LAMBDA_DEFAULT_ARCH) is not in LAMBDA_ARCHS=$(LAMBDA_ARCHS)" >&2; exit 1 ;; esac
	@for arch in $(LAMBDA_ARCHS); do case $$arch in arm64 | amd64) ;; *) \
		echo "lambda: architecture $$arch: Lambda runs arm64 and amd64 (x86_64) only" >&2; exit 1 ;; esac; done
	@mkdir -p $(LAMBDA_DIR)/build
	env -u GOOS -u GOARCH $(GO) build -o $(LAMBDA_DIR)/build/lambdazip ./tools/lambdazip
	@set -e; for fn in $(LAMBDA_FUNCTIONS); do \
		for arch in $(LAMBDA_ARCHS); do \
			mkdir -p $(LAMBDA_DIR)/build/$$fn-$$arch; \
			echo "lambda: $$fn ($$arch)"; \
			CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -tags lambda.norpc -ldflags "-s -w" \
				-o $(LAMBDA_DIR)/build/$$fn-$$arch/bootstrap ./functions/aws/$$fn; \
			$(LAMBDA_DIR)/build/lambdazip -o $(LAMBDA_DIR)/$$fn-$$arch.zip $(LAMBDA_DIR)/build/$$fn-$$arch/bootstrap; \
		done; \
		cp $(LAMBDA_DIR)/$$fn-$(LAMBDA_DEFAULT_ARCH).zip $(LAMBDA_DIR)/$$fn.zip; \
		echo "lambda: $(LAMBDA_DIR)/$$fn.zip = $$fn-$(LAMBDA_DEFAULT_ARCH).zip"; \
	done
	@ls -l $(LAMBDA_DIR)/*.zip

# The Google Cloud container image, built without Docker: one
# static binary for every Cloud Run service (the role comes from
# CERTFN_FUNCTION) in a scratch image with the CA bundle, written as an OCI
# image tarball by tools/ociimage. Push it to a registry you have, e.g.
# `crane push dist/gcp/certfn-amd64.tar REGION-docker.pkg.dev/PROJECT/REPO/certfn`.
GCP_DIR := dist/gcp
GCP_ARCH ?= amd64
gcp-image:
	@mkdir -p $(GCP_DIR)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GCP_ARCH) $(GO) build -trimpath -ldflags "-s -w" -o $(GCP_DIR)/certfn-$(GCP_ARCH) ./functions/gcp/certfn
	$(GO) run ./tools/ociimage -o $(GCP_DIR)/certfn-$(GCP_ARCH).tar -binary $(GCP_DIR)/certfn-$(GCP_ARCH) -arch $(GCP_ARCH) -ref certfn:latest
	@ls -l $(GCP_DIR)/certfn-$(GCP_ARCH).tar

# Benchmarks behind the figures in README.md. The last one is the peer
# benchmark (tests/bench/peers): it installs certbot, lego and cfssl with
# apt-get when missing (root or sudo) and runs them beside certfn against the
# same Pebble and CA (CERTFN_PEERS_N: certificates per peer row, default 10).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x -timeout 20m ./adapters/local/ ./core/policy/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./tests/bench/
	$(GO) test -run '^$$' -bench . -benchtime 10x -timeout 20m ./tests/acme/
	$(GO) test -run '^$$' -bench Peers -benchtime 1x -timeout 60m ./tests/bench/peers/

# Issue real certificates locally: a private CA and a leaf with a PKCS#12 keystore.
demo:
	bash scripts/demo.sh

# Hygiene checks (CI runs them before the tests): gofmt, no init() functions,
# go.mod/go.sum as `go mod tidy` leaves them, go vet and staticcheck (the
# version go.mod's tool directive pins; built by the go command), and
# tools/lint: the import layers (cmd, functions -> internal -> adapters ->
# core; the kernel imports no kind) and no reference a reader cannot follow
# (a build machine's path, a design document or issue by its number).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@if git grep -nE '^func init\(\)' -- '*.go'; then echo "lint: init() functions are not allowed (above)"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "lint: go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test -count=1 ./tools/lint/

# Short fuzzing runs of the parsers (the seed corpora also run in `make test`).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 20s ./core/api/
	$(GO) test -run '^$$' -fuzz FuzzValidateCertificateRequest -fuzztime 20s ./core/validation/
	$(GO) test -run '^$$' -fuzz FuzzParseCSRPEM -fuzztime 20s ./core/pki/
	$(GO) test -run '^$$' -fuzz '^FuzzParseKey$$' -fuzztime 20s ./core/api/
	$(GO) test -run '^$$' -fuzz '^FuzzCSRManifest$$' -fuzztime 20s ./core/api/
	$(GO) test -run '^$$' -fuzz '^FuzzCSRValidation$$' -fuzztime 20s ./core/validation/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeBody$$' -fuzztime 20s ./adapters/aws/sqsq/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRetryAfter$$' -fuzztime 20s ./adapters/acme/
	$(GO) test -run '^$$' -fuzz '^FuzzMapError$$' -fuzztime 20s ./adapters/acme/
	$(GO) test -run '^$$' -fuzz '^FuzzRenewalInfo$$' -fuzztime 20s ./adapters/acme/
	$(GO) test -run '^$$' -fuzz '^FuzzApprovalAndObjectPaths$$' -fuzztime 20s ./adapters/httpapi/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeMain$$' -fuzztime 20s ./adapters/aws/ssmstore/
	$(GO) test -run '^$$' -fuzz '^FuzzParseManifest$$' -fuzztime 20s ./internal/tfprovider/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeReviewProto$$' -fuzztime 20s ./adapters/kubeapi/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeApprovalProto$$' -fuzztime 20s ./adapters/kubeapi/

clean:
	rm -rf bin

# The Terraform provider (docs/deploy/terraform.md): bin/terraform-provider-certfn,
# installed into a filesystem mirror as
# <PROVIDER_MIRROR>/registry.terraform.io/certfn/certfn/<PROVIDER_VERSION>/<os>_<arch>/.
# The default mirror, ~/.terraform.d/plugins, is one terraform searches by
# itself when the CLI configuration has no provider_installation block; the
# snippets printed configure an explicit mirror or dev_overrides.
PROVIDER_VERSION ?= 0.1.0
PROVIDER_MIRROR ?= $(HOME)/.terraform.d/plugins
PROVIDER_PLATFORM = $(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH)
provider:
	$(GO) build -ldflags "-X main.version=$(PROVIDER_VERSION)" -o bin/terraform-provider-certfn ./cmd/terraform-provider-certfn
	@dir="$(PROVIDER_MIRROR)/registry.terraform.io/certfn/certfn/$(PROVIDER_VERSION)/$(PROVIDER_PLATFORM)"; \
	mkdir -p "$$dir" && cp bin/terraform-provider-certfn "$$dir/terraform-provider-certfn_v$(PROVIDER_VERSION)" && \
	echo "installed $$dir/terraform-provider-certfn_v$(PROVIDER_VERSION)"; \
	printf '%s\n' "" \
	  "# Either: a filesystem mirror (in ~/.terraformrc or \$$TF_CLI_CONFIG_FILE; terraform init installs and locks it):" \
	  "provider_installation {" \
	  "  filesystem_mirror {" \
	  "    path    = \"$(PROVIDER_MIRROR)\"" \
	  "    include = [\"registry.terraform.io/certfn/certfn\"]" \
	  "  }" \
	  "  direct {" \
	  "    exclude = [\"registry.terraform.io/certfn/certfn\"]" \
	  "  }" \
	  "}" \
	  "" \
	  "# Or, while developing: dev_overrides (no terraform init for certfn, no lock entry):" \
	  "provider_installation {" \
	  "  dev_overrides {" \
	  "    \"certfn/certfn\" = \"$(CURDIR)/bin\"" \
	  "  }" \
	  "  direct {}" \
	  "}"

# Installing on a VM (docs/deploy/local.md): `make build && sudo make install`
# copies bin/certfn (building it only when missing) to $(PREFIX)/bin, the
# systemd unit (its ExecStart pointed at that binary) to
# $(PREFIX)/lib/systemd/system — on systemd's unit path for /usr/local and
# /usr, and leaving /etc/systemd/system to the administrator's overrides; set
# SYSTEMD_UNIT_DIR=/etc/systemd/system for another PREFIX — and the example
# /etc/default/certfn (0600) unless one exists. Everything goes under
# $(DESTDIR); nothing else is created (no user, no daemon-reload: see
# docs/deploy/local.md). `make uninstall` removes the binary and the unit, and
# /etc/default/certfn only when it is unchanged.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
DEFAULTS_FILE := /etc/default/certfn
INSTALL ?= install
install:
	@[ -x $(BIN) ] || $(MAKE) build
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSTEMD_UNIT_DIR) $(DESTDIR)$(dir $(DEFAULTS_FILE))
	$(INSTALL) -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/certfn
	sed 's|/usr/bin/certfn|$(BINDIR)/certfn|' packaging/systemd/certfn.service > $(DESTDIR)$(SYSTEMD_UNIT_DIR)/.certfn.service.tmp
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/.certfn.service.tmp
	mv -f $(DESTDIR)$(SYSTEMD_UNIT_DIR)/.certfn.service.tmp $(DESTDIR)$(SYSTEMD_UNIT_DIR)/certfn.service
	$(INSTALL) -m 0644 packaging/systemd/certfn.socket $(DESTDIR)$(SYSTEMD_UNIT_DIR)/certfn.socket
	@if [ -e $(DESTDIR)$(DEFAULTS_FILE) ]; then \
		echo "install: kept the existing $(DESTDIR)$(DEFAULTS_FILE)"; \
	else \
		echo "$(INSTALL) -m 0600 packaging/default/certfn $(DESTDIR)$(DEFAULTS_FILE)"; \
		$(INSTALL) -m 0600 packaging/default/certfn $(DESTDIR)$(DEFAULTS_FILE); \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/certfn $(DESTDIR)$(SYSTEMD_UNIT_DIR)/certfn.service $(DESTDIR)$(SYSTEMD_UNIT_DIR)/certfn.socket
	@if cmp -s packaging/default/certfn $(DESTDIR)$(DEFAULTS_FILE); then \
		echo "rm -f $(DESTDIR)$(DEFAULTS_FILE)"; rm -f $(DESTDIR)$(DEFAULTS_FILE); \
	elif [ -e $(DESTDIR)$(DEFAULTS_FILE) ]; then \
		echo "uninstall: kept $(DESTDIR)$(DEFAULTS_FILE) (changed since installed)"; \
	fi

# Release files (docs/deploy/local.md): dist/certfn_<VERSION>_linux_<arch>.tar.gz
# and dist/certfn_<VERSION>_<arch>.deb for amd64 and arm64, and
# dist/SHA256SUMS, written by tools/release: static binaries (-trimpath,
# main.version set), reproducible archives whose entries carry
# SOURCE_DATE_EPOCH (default: the last commit's time). VERSION defaults to
# the last v* tag (without the v; git describe's suffix after it), else
# 0.0.0~git<commit date>.<commit>.
VERSION ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null) && echo "$$v" | sed 's/^v//' || \
	echo "0.0.0~git$$(git log -1 --format=%cd --date=format:%Y%m%d).$$(git rev-parse --short=12 HEAD)")
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct)
RELEASE_ARCHS ?= amd64 arm64
DEB_MAINTAINER ?= certfn maintainers <maintainers@certfn.invalid>
print-version:
	@echo '$(VERSION)'

release:
	$(GO) run ./tools/release -version '$(VERSION)' -mtime '$(SOURCE_DATE_EPOCH)' -arch '$(RELEASE_ARCHS)' \
		-maintainer '$(DEB_MAINTAINER)' -go '$(GO)' -o dist

# Terraform checks of infra/terraform/aws: fmt -check, init -backend=false,
# validate and plan (provider mirror, no AWS account) and the IAM
# least-privilege evaluation; of infra/terraform/gcp: fmt -check, validate and
# a full-option offline plan of the module and its example against the
# hashicorp/google build of the machines' shared Terraform mirror (or CERTFN_TF_GOOGLE_MIRROR,
# or your plugin cache; see infra/terraform/gcp/README.md). Also run by
# `make test` (they are Go tests).
.PHONY: tf-check localstack-e2e
tf-check:
	$(GO) test -count=1 -timeout 15m ./tests/terraform/

# certfn on LocalStack end to end (needs a Docker engine): see docs/deploy/aws.md.
localstack-e2e:
	bash localstack/e2e.sh
