# KiloLock. `make test` is the whole suite, as CI runs it (.ci/run).

GO       ?= go
# The -X flags that stamp internal/buildinfo (version, commit, build date).
LDFLAGS   = $(shell bash scripts/version.sh)
FUZZTIME ?= 30s
TIMEOUT  ?= 60m

.PHONY: all run build image tofu test fmt-check mod-check vet gotest bench bench-memory bench-fleet fuzz clean

# The Kubernetes manifests' check: a module of its own, to keep k8s.io/api
# out of the library's go.mod (deploy/kubernetes/validate/doc.go).
K8S_CHECK = deploy/kubernetes/validate

all: build

## run: start kld on 127.0.0.1:8080 with ./kilolock.db (ARGS="--database postgres://…")
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/kld $(ARGS)

## build: kld and kl into bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/kld ./cmd/kl

## image: the OCI image kilolock:VERSION, FROM scratch, offline, with podman (or docker): docs/deploy.md
image:
	bash scripts/image.sh

## tofu: build the pinned OpenTofu, Terraform v1.5.7 and the hashicorp/time provider into .cache/tofu
tofu:
	bash scripts/install-tofu.sh
	bash scripts/install-terraform.sh

## test: gofmt, go mod tidy, go vet and every test, with PostgreSQL, the real OpenTofu and Terraform, headless Chromium, the image (podman) and the deployment files
test: fmt-check mod-check vet gotest

fmt-check:
	@out=$$(find . -name '*.go' -not -path './.cache/*' -not -path './.git/*' -not -path '*/testdata/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# go.mod and go.sum list exactly what the code imports.
mod-check:
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }
	@cd $(K8S_CHECK) && $(GO) mod tidy -diff || { echo "$(K8S_CHECK)/go.mod or go.sum is not tidy: run go mod tidy there"; exit 1; }

vet:
	$(GO) vet ./...
	cd $(K8S_CHECK) && $(GO) vet ./...

gotest: tofu
	$(GO) test -timeout $(TIMEOUT) ./...
	cd $(K8S_CHECK) && $(GO) test ./...

## bench: every benchmark, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-memory: a real kld's peak RSS and times with 10,000 and 100,000 instances, on both stores
bench-memory:
	$(GO) test ./internal/e2e -run '^$$' -bench KLDMemory -benchtime 3x -timeout 30m

# The fleet benchmark's fleets ("[STORE:]STATESxINSTANCES") and cycles per
# fleet: FLEET_SIZES=10x50,50x50 FLEET_COMMITS=200 is a quick smoke run.
# FLEET_CLIENT: edit (the default: the client costs next to nothing),
# terraform (each body marshalled as Terraform does) or tofu (each cycle a
# real `tofu state push`; the commits/s goal's measure, with FLEET_COMMITS=400).
# KL_FLEET_KLD=path runs another build of kld through the same load.
FLEET_SIZES   ?= 10x500 200x500 1000x500 postgres:10000x100
FLEET_COMMITS ?= 2000
FLEET_CLIENT  ?= edit

## bench-fleet: 8 writers on fleets of states (FLEET_SIZES), a real kld on both stores beside an in-memory blob server: commits/s, POST p50/p99, RSS, cache hits
bench-fleet:
	KL_FLEET_SIZES="$(FLEET_SIZES)" KL_FLEET_COMMITS=$(FLEET_COMMITS) KL_FLEET_CLIENT=$(FLEET_CLIENT) $(GO) test ./internal/e2e -run '^$$' -bench KLDFleet -benchtime 1x -timeout 180m

## fuzz: a short run of the state parser's, the canonicalizer's and the tenant query lane's fuzz targets (FUZZTIME=30s each)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./graph
	$(GO) test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZTIME) ./graph
	$(GO) test -run '^$$' -fuzz '^FuzzTenantQuery$$' -fuzztime $(FUZZTIME) ./httpbackend

clean:
	rm -rf bin .cache/kltest

# The small parallel-apply demo (examples/parallel-apply/README.md): two
# applies at once on one optimistic two-resource state. KL_SERVER (default
# http://localhost:8080) names the kld; PARALLEL_SLEEP the seconds each
# changed resource takes.
PARALLEL_SLEEP ?= 15
PARALLEL_A     ?= -var a=v2 -var b=v1 -var sleep=$(PARALLEL_SLEEP)
PARALLEL_B     ?= -var a=v1 -var b=v2 -var sleep=$(PARALLEL_SLEEP)

.PHONY: parallel-demo parallel-small-a parallel-small-b

## parallel-demo: kld (running, else a new one on a temp DB), seed, both applies at once, timings; builds OpenTofu only when neither TOFU, .cache/tofu/bin/tofu nor tofu in PATH gives one
parallel-demo: build
	@if [ -z "$$TOFU" ] && [ ! -x .cache/tofu/bin/tofu ] && ! command -v tofu >/dev/null; then $(MAKE) tofu; fi
	SLEEP=$(PARALLEL_SLEEP) bash examples/parallel-apply/demo.sh

## parallel-small-a: terminal A of the small demo (after examples/parallel-apply/seed.sh): changes a
parallel-small-a:
	bash examples/parallel-apply/apply.sh a $(PARALLEL_A)

## parallel-small-b: terminal B of the small demo: changes b
parallel-small-b:
	bash examples/parallel-apply/apply.sh b $(PARALLEL_B)

# The demo (examples/big-state/README.md), on state big-state of
# KL_SERVER's kld (default http://localhost:8080): a configuration of
# 10,000 cheap resources and two slow ones. TF_BIN (a name in PATH or a
# path; default the pinned OpenTofu) is the CLI every target runs.
.PHONY: demo-warm demo-status parallel-tf-a parallel-tf-b

## demo-warm: restore big-state to the pre-baked state of examples/big-state (or into DATABASE=…); prints the time
demo-warm: build
	DATABASE=$(DATABASE) bash examples/big-state/demo-warm.sh

## demo-status: big-state's version, instances, lock mode and holders
demo-status: build
	bin/kl $(if $(DATABASE),--database $(DATABASE)) status $(or $(STATE),big-state)

## parallel-tf-a: terminal A of the parallel beat: tofu apply -refresh=false replacing time_sleep.slow_a, from /tmp/parallel-tf-a
parallel-tf-a: build
	bash examples/big-state/parallel-tf.sh a

## parallel-tf-b: terminal B, at the same time: replaces time_sleep.slow_b, from /tmp/parallel-tf-b
parallel-tf-b: build
	bash examples/big-state/parallel-tf.sh b

# The reservation demos (examples/big-state/README.md): orchestrated
# applies on state big-state of KL_SERVER's kld (default
# http://localhost:8080), from copies of examples/big-state in
# .cache/orchestrated/. WAIT_SLEEP is the seconds each changed resource
# takes.
WAIT_SLEEP   ?= 30
ORCHESTRATED  = bash examples/big-state/orchestrated.sh

.PHONY: wait-demo wait-demo-blocker wait-demo-waiter parallel-demo-a parallel-demo-b

## wait-demo-blocker: terminal 1 of the wait demo: reserves and replaces time_sleep.slow_a
wait-demo-blocker: build
	$(ORCHESTRATED) blocker --target time_sleep.slow_a --var slow_a_version=blocker-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP)

## wait-demo-waiter: terminal 2 (within a few seconds): waits for the blocker, streaming who holds what, then applies
wait-demo-waiter: build
	$(ORCHESTRATED) waiter --target time_sleep.slow_a --var slow_a_version=waiter-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP) --wait-timeout 2m

## wait-demo: both in one terminal: the blocker in the background (/tmp/wait-demo-blocker.log), the waiter in the foreground
wait-demo: build
	@$(ORCHESTRATED) blocker --target time_sleep.slow_a --var slow_a_version=blocker-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP) >/tmp/wait-demo-blocker.log 2>&1 & \
	blocker=$$!; \
	for i in $$(seq 1 600); do grep -q 'kl: reserved:' /tmp/wait-demo-blocker.log && break; kill -0 $$blocker 2>/dev/null || break; sleep 0.1; done; \
	echo "blocker running in the background (log: /tmp/wait-demo-blocker.log)"; \
	$(ORCHESTRATED) waiter --target time_sleep.slow_a --var slow_a_version=waiter-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP) --wait-timeout 2m; \
	rc=$$?; wait $$blocker; exit $$rc

## parallel-demo-a: terminal A of the reservation demo: reserves and replaces time_sleep.slow_a
parallel-demo-a: build
	$(ORCHESTRATED) a --target time_sleep.slow_a --var slow_a_version=a-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP)

## parallel-demo-b: terminal B, at the same time: time_sleep.slow_b; neither waits for the other
parallel-demo-b: build
	$(ORCHESTRATED) b --target time_sleep.slow_b --var slow_b_version=b-$$(date +%s) --var slow_seconds=$(WAIT_SLEEP)
