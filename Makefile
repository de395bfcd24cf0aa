# KiloLock. `make test` is the whole suite, as CI runs it (.ci/run).

GO       ?= go
# The -X flags that stamp internal/buildinfo (version, commit, build date).
LDFLAGS   = $(shell bash scripts/version.sh)
FUZZTIME ?= 30s
TIMEOUT  ?= 30m

.PHONY: all run build tofu test fmt-check mod-check vet gotest bench bench-memory fuzz clean

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

## test: gofmt, go mod tidy, go vet and every test, with PostgreSQL, the real OpenTofu and headless Chromium
test: fmt-check mod-check vet gotest

fmt-check:
	@out=$$(find . -name '*.go' -not -path './.cache/*' -not -path './.git/*' -not -path '*/testdata/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# go.mod and go.sum list exactly what the code imports.
mod-check:
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }

vet:
	$(GO) vet ./...

gotest: tofu
	$(GO) test -timeout $(TIMEOUT) ./...

## bench: every benchmark, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-memory: a real kld's peak RSS and times with 10,000 and 100,000 instances, on both stores
bench-memory:
	$(GO) test ./internal/e2e -run '^$$' -bench KLDMemory -benchtime 3x -timeout 30m

## fuzz: a short run of the state parser's and the canonicalizer's fuzz targets (FUZZTIME=30s each)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./graph
	$(GO) test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZTIME) ./graph

clean:
	rm -rf bin .cache/kltest

# The parallel-apply demo (examples/parallel-apply/README.md): two applies at
# once on one optimistic state. KL_SERVER (default http://localhost:8080)
# names the kld; PARALLEL_SLEEP the seconds each changed resource takes.
PARALLEL_SLEEP ?= 15
PARALLEL_A     ?= -var a=v2 -var b=v1 -var sleep=$(PARALLEL_SLEEP)
PARALLEL_B     ?= -var a=v1 -var b=v2 -var sleep=$(PARALLEL_SLEEP)

.PHONY: parallel-demo parallel-tf-a parallel-tf-b

## parallel-demo: kld (running, else a new one on a temp DB), seed, both applies at once, timings
parallel-demo: build tofu
	SLEEP=$(PARALLEL_SLEEP) bash examples/parallel-apply/demo.sh

## parallel-tf-a: terminal A of the demo (after examples/parallel-apply/seed.sh): changes a
parallel-tf-a:
	bash examples/parallel-apply/apply.sh a $(PARALLEL_A)

## parallel-tf-b: terminal B of the demo: changes b
parallel-tf-b:
	bash examples/parallel-apply/apply.sh b $(PARALLEL_B)

# The warm start (examples/big-state/README.md): a 10,000-instance state
# loaded with kl import into KL_SERVER's kld, or with DATABASE=… straight
# into a database.
.PHONY: demo-warm

## demo-warm: generate examples/big-state/big.tfstate (once) and kl import it as state "big"; prints the time
demo-warm: build
	DATABASE=$(DATABASE) bash examples/big-state/demo-warm.sh

# The reservation demos (examples/big-state/README.md): orchestrated
# applies on state big-state of KL_SERVER's kld (default
# http://localhost:8080), from copies of examples/big-state in
# .cache/orchestrated/. WAIT_SLEEP is the seconds each changed resource
# takes.
WAIT_SLEEP   ?= 20
ORCHESTRATED  = bash examples/big-state/orchestrated.sh

.PHONY: wait-demo wait-demo-blocker wait-demo-waiter parallel-demo-a parallel-demo-b

## wait-demo-blocker: terminal 1 of the wait demo: reserves and replaces time_sleep.slow_a
wait-demo-blocker: build
	$(ORCHESTRATED) blocker -f slow_a.tf --var slow_a_version=blocker-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP)

## wait-demo-waiter: terminal 2 (within a few seconds): waits for the blocker, streaming who holds what, then applies
wait-demo-waiter: build
	$(ORCHESTRATED) waiter -f slow_a.tf --var slow_a_version=waiter-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP) --wait-timeout 2m

## wait-demo: both in one terminal: the blocker in the background (/tmp/wait-demo-blocker.log), the waiter in the foreground
wait-demo: build
	@$(ORCHESTRATED) blocker -f slow_a.tf --var slow_a_version=blocker-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP) >/tmp/wait-demo-blocker.log 2>&1 & \
	blocker=$$!; \
	for i in $$(seq 1 600); do grep -q 'kl: reserved:' /tmp/wait-demo-blocker.log && break; kill -0 $$blocker 2>/dev/null || break; sleep 0.1; done; \
	echo "blocker running in the background (log: /tmp/wait-demo-blocker.log)"; \
	$(ORCHESTRATED) waiter -f slow_a.tf --var slow_a_version=waiter-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP) --wait-timeout 2m; \
	rc=$$?; wait $$blocker; exit $$rc

## parallel-demo-a: terminal A of the reservation demo: reserves and replaces time_sleep.slow_a
parallel-demo-a: build
	$(ORCHESTRATED) a -f slow_a.tf --var slow_a_version=a-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP)

## parallel-demo-b: terminal B, at the same time: time_sleep.slow_b; neither waits for the other
parallel-demo-b: build
	$(ORCHESTRATED) b -f slow_b.tf --var slow_b_version=b-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP)
