# Every target installs what it needs first (scripts/install-deps.sh is quiet when all is there),
# so `make demo` and `make test` work on a fresh Debian 12 machine.
JOBS ?= $(shell nproc)
DEPS := scripts/install-deps.sh

.PHONY: deps build payload test test-sanitize fuzz demo demo-dra demo-inspect bench bench-e2e images clean e2e
.PHONY: e2e-two-nodes demo-two-nodes demo-payload demo-dra-payload

deps:
	@bash $(DEPS)

build: deps
	@bash scripts/configure.sh default
	@cmake --build --preset default -j $(JOBS)

# What the e2e VM runs (CMake target rdmak8s_e2e_payload: the binaries e2e/build-image.sh copies),
# without the tests, fuzz targets and benchmarks `make build` adds: make e2e and the two-node rules build
# only this (make demo and demo-dra less, below).
payload: deps
	@bash scripts/configure.sh default
	@cmake --build --preset default -j $(JOBS) --target rdmak8s_e2e_payload

# make demo's and make demo-dra's part of the payload: only the binaries their scenario runs.
demo-payload: deps
	@bash scripts/configure.sh default
	@cmake --build --preset default -j $(JOBS) --target rdmak8s_demo_payload

demo-dra-payload: deps
	@bash scripts/configure.sh default
	@cmake --build --preset default -j $(JOBS) --target rdmak8s_demo_dra_payload

# The VM image cache lives outside the checkout so that fresh clones on the same machine (CI)
# reuse it; it is keyed by content, so a stale entry is never used.
E2E_CACHE ?= /var/cache/rdmak8s/e2e
export E2E_CACHE

# The whole suite (scripts/test.sh, one stage after another, then their times): the shipped
# binaries and their own checks (default preset); the unit and integration suite under ASan +
# UBSan (clang, preset asan: real netns, veth, unix-socket gRPC); the threaded tests under TSan
# (preset tsan); clang-tidy; then the e2e scenarios with real RDMA traffic in a VM, then the
# two-node ones (E2E_TWO_NODES=0 leaves those out).
test: deps
	@JOBS=$(JOBS) bash scripts/test.sh

# Only the sanitizer stages of make test: the suite under ASan + UBSan, the threaded tests under TSan.
test-sanitize: deps
	@JOBS=$(JOBS) TEST_STAGES="asan tsan" bash scripts/test.sh

# libFuzzer (clang, ASan + UBSan, preset fuzz in build/fuzz): every target of fuzz/ for
# FUZZ_SECONDS over its corpus (which grows: commit what it adds), then a table of executions,
# corpus inputs and crashes; exits non-zero on any crash. `make test` replays the corpus without
# clang. See docs/reliability.md#fuzzing.
FUZZ_SECONDS ?= 30
fuzz: deps
	@bash scripts/configure.sh fuzz
	@cmake --build --preset fuzz -j $(JOBS)
	@bash scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS)

# clang-tidy over the product's own sources (checks and why: .clang-tidy), warnings as errors, on
# the default preset's compile database; protoc only, for the generated headers our sources include.
.PHONY: tidy
tidy: deps
	@bash scripts/configure.sh default
	@cmake --build --preset default --target rdmak8s_node_proto_gen rdmak8s_dp_proto_gen rdmak8s_dra_proto_gen >/dev/null
	@TIDY_JOBS=$(JOBS) bash scripts/tidy.sh build/default

# The reliability figures in one table (issue 13): the crash at every CNI step, CNI concurrency
# through libcni, the device plugin soak (ctest label "reliability") and the fuzz corpus replays.
.PHONY: reliability
reliability: build
	@bash scripts/reliability.sh build/default

# End to end: real RDMA traffic (soft RoCE v2 and iWARP) between pods in a qemu VM, wired by the
# device plugin and the CNI plugin. Some scenarios: make e2e E2E_SCENARIO="rxe-shared failures". See e2e/README.md.
e2e: payload
	@python3 e2e/run.py --build-dir build/default $(foreach s,$(E2E_SCENARIO),-s $(s))

# Two nodes: two qemu VMs (one vCPU each) joined by one virtual Ethernet link, each with its own
# device plugin or DRA driver, fake kubelet and CNI chain; RDMA traffic between pods on different
# nodes (RoCE v2 shared, iWARP shared, RoCE v2 exclusive with DRA: make test runs those), and the
# two make test leaves out (two-node-link, two-node-mtu: what the others prove too). See
# e2e/README.md.
e2e-two-nodes: payload
	@python3 e2e/run.py --two-nodes --with-optional --build-dir build/default

# The two-node RoCE v2 run, with its figures (cross-node verbs and rdma_cm bandwidth/latency).
demo-two-nodes: payload
	@python3 e2e/run.py -q -s two-node-rxe-shared --build-dir build/default

# Two pods exchanging RDMA traffic in the e2e VM, narrated step by step (advertised devices,
# Allocate's answers, CNI results, GIDs, bandwidth and latency); fails when no traffic happened.
demo: demo-payload
	@python3 e2e/run.py --demo --build-dir build/default

# make demo, the DRA way: the driver's ResourceSlices on a (fake) API server, one allocated claim
# per pod, NodePrepareResources and the CDI spec each pod's devices come from, CNI ADD by pod UID,
# RDMA traffic, teardown (e2e/guest/scenarios/demo-dra.sh).
demo-dra: demo-dra-payload
	@python3 e2e/run.py --demo --demo-scenario demo-dra --build-dir build/default

# What rdmak8s discovers on this host and on the bundled sysfs trees of every kind of hardware.
demo-inspect: build
	@bash scripts/demo.sh build/default

bench: deps
	@bash scripts/configure.sh release
	@cmake --build --preset release -j $(JOBS)
	@bash scripts/bench.sh build/release

# The CNI's ADD/DEL figures where only the kernel can give them: our binary exec'ed 270 times per
# command on a real rxe in exclusive mode, in the e2e VM (e2e/guest/scenarios/cni-bench.sh).
bench-e2e: payload
	@python3 e2e/run.py --build-dir build/default -s cni-bench

# Container images (images/*/Dockerfile) with docker, podman or buildah, whichever works. Exits 2
# with a clear message when no container engine works: nothing built is not success.
# IMAGE_REPO / IMAGE_TAG / CONTAINER_ENGINE override the defaults (see images/build.sh).
images:
	@bash images/build.sh

clean:
	rm -rf build
