# npuverify — see README.md. Every target works from a clean checkout.
GO        ?= go
FUZZTIME  ?= 30s
BENCHTIME ?= 1s
REPORT    ?= out/report

.PHONY: test test-purego test-v3 test-arm64 test-exec test-worker test-stress report fuzz golden bench lint build mutation

## test: the default suite: Ginkgo UT/ST/perf specs, properties, fuzz seed corpora. Without go test's
## built-in vet pass: `make lint` runs go vet with every analyzer (a superset of that pass) and CI runs it
## first, so the pass would only repeat it.
test:
	$(GO) test -vet=off ./...

## test-purego: the packages with SIMD assembly, on their portable Go paths (-tags purego);
## the default run already holds each assembly kernel to its Go twin bit for bit.
SIMD_PKGS = ./internal/dgemm ./internal/gemm32 ./npu ./ops ./tensor ./verify ./bound
test-purego:
	$(GO) vet -tags purego $(SIMD_PKGS)
	$(GO) test -tags purego -count=1 $(SIMD_PKGS)

## test-v3: the whole suite built for GOAMD64=v3, where the compiler may fuse a multiply and an add
## (as arm64 always may): every bit the tests pin must come out the same (needs a v3 CPU).
test-v3:
	GOAMD64=v3 $(GO) test -vet=off -count=1 ./...

## test-arm64: the whole suite built for arm64 and run under qemu-user (apt-get install qemu-user;
## tests that exec a binary they build need binfmt_misc to know qemu-aarch64). About 20 minutes.
test-arm64:
	GOARCH=arm64 CGO_ENABLED=0 $(GO) test -exec qemu-aarch64 -count=1 -timeout 60m ./...

## test-exec: the same UT/ST suites against the independent C kernel (backend/testdata/ckernel)
## through the exec backend; any kernel can be put under test with NPUVERIFY_BACKEND=exec:'CMD'
## (docs/testing-your-kernel.md). -v prints the per-op summary; -timeout well above the run.
SUITES_TIMEOUT ?= 30m
test-exec:
	mkdir -p bin && $(CC) -O2 -std=c11 -o bin/ckernel backend/testdata/ckernel/*.c -lm
	NPUVERIFY_BACKEND="exec:$(CURDIR)/bin/ckernel" $(GO) test -count=1 -timeout $(SUITES_TIMEOUT) -v -run TestSuites ./suites

## test-worker: the same, with the C kernel kept running as a worker (worker:'CMD').
test-worker:
	mkdir -p bin && $(CC) -O2 -std=c11 -o bin/ckernel backend/testdata/ckernel/*.c -lm
	NPUVERIFY_BACKEND="worker:$(CURDIR)/bin/ckernel" $(GO) test -count=1 -timeout $(SUITES_TIMEOUT) -v -run TestSuites ./suites

## test-stress: the exec backend's containment on real processes, many times over (a kernel that
## orphans a grandchild as it exits, 300 runs): races the default suite covers on a scripted table.
test-stress:
	NPUVERIFY_STRESS=1 $(GO) test -count=1 -run 'Stress' -v ./backend

## mutation: mutation score: the default suite against every injected kernel fault (table of the
## first case and check that caught each, or SURVIVED) and false alarms on valid variants.
mutation:
	$(GO) run ./cmd/npuverify mutate

## report: accuracy + performance report on the embedded default cases.
report:
	$(GO) run ./cmd/npuverify report --out $(REPORT)

## fuzz: run every fuzz target for FUZZTIME each (crashers land in testdata/fuzz).
fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

## golden: regenerate the checked-in golden cases (atomic) and show what changed.
golden:
	$(GO) test ./golden/... -run TestUpdateGolden -update -v

## bench: Go benchmarks (benchstat-friendly).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./...

## lint: gofmt, go vet, staticcheck (pinned in go.mod as a tool) and fmacheck (no multiply-add fused
## where the source does not call math.FMA, on amd64 v3 and arm64: scripts/fmacheck.sh).
lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt: files above need formatting"; exit 1)
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	./scripts/fmacheck.sh

build:
	$(GO) build -o bin/npuverify ./cmd/npuverify
