# certfn — see README.md. Every target works on a fresh machine with Go installed:
# Go modules are fetched by the go command itself.
GO ?= go
BIN := bin/certfn

.PHONY: build test bench demo lint fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/certfn

# The whole test suite (what CI runs).
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 15m ./...

# Benchmarks behind the figures in README.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x -timeout 20m ./adapters/local/ ./core/policy/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./tests/bench/

# Issue real certificates locally: a private CA and a leaf with a PKCS#12 keystore.
demo: build
	bash scripts/demo.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Short fuzzing runs of the parsers (the seed corpora also run in `make test`).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 20s ./core/api/
	$(GO) test -run '^$$' -fuzz FuzzValidateCertificateRequest -fuzztime 20s ./core/validation/
	$(GO) test -run '^$$' -fuzz FuzzParseCSRPEM -fuzztime 20s ./core/pki/

clean:
	rm -rf bin
