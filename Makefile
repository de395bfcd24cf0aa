# KiloLock. `make test` is the whole suite, as CI runs it (.ci/run).

GO       ?= go
# The -X flags that stamp internal/buildinfo (version, commit, build date).
LDFLAGS   = $(shell bash scripts/version.sh)
FUZZTIME ?= 30s
TIMEOUT  ?= 30m

.PHONY: all run build tofu test fmt-check vet gotest bench fuzz clean

all: build

## run: start kld on 127.0.0.1:8080 with ./kilolock.db (ARGS="--database postgres://…")
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/kld $(ARGS)

## build: kld and kl into bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/kld ./cmd/kl

## tofu: build the pinned OpenTofu and the hashicorp/time provider into .cache/tofu
tofu:
	bash scripts/install-tofu.sh

## test: gofmt, go vet and every test, with PostgreSQL and the real OpenTofu
test: fmt-check vet gotest

fmt-check:
	@out=$$(find . -name '*.go' -not -path './.cache/*' -not -path './.git/*' -not -path '*/testdata/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

gotest: tofu
	$(GO) test -timeout $(TIMEOUT) ./...

## bench: every benchmark, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: a short run of the state parser's fuzz target (FUZZTIME=30s)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./graph

clean:
	rm -rf bin .cache/kltest
