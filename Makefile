# Two commands do everything on a fresh Debian 12 machine:
#   make run    install missing packages, configure, build, run the default suite (host backend)
#   make test   the same set-up, then the whole test suite (release, release with a fake
#               accelerator first in `auto`, ASan/UBSan builds, and each libFuzzer target
#               for 5 s)
PRESET ?= default
BUILD := build/$(PRESET)
XB := $(BUILD)/xferbench
# The peer tools of `make bench` on a GPU, built from their public sources (README,
# "Speed check against peer tools"): the folder holding nvbandwidth, and nccl-tests'
# build/ folder. Empty: those two comparisons print `waived` with where to get them.
NVBANDWIDTH ?=
NCCL_TESTS ?=

.PHONY: all deps configure build run test test-release test-fake-accel test-asan test-fuzz fuzz fuzz-build bench format clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@test -f $(BUILD)/build.ninja || cmake --preset $(PRESET)

build: configure
	cmake --build --preset $(PRESET)

run: build
	$(XB) list --backend host
	$(XB) topo --backend host
	$(XB) copy --backend host
	mpiexec -n 2 $(XB) remote --backend host
	mpiexec -n 2 $(XB) coll allreduce --backend host -b 64K -e 4M
	$(XB) engine selftest

test: test-release test-fake-accel test-asan test-fuzz

test-release: build
	ctest --preset $(PRESET) -j2

# The suite again with a fake Ascend runtime installed, so `auto` picks an
# accelerator first: proves no test takes `auto` to mean the host.
test-fake-accel: build
	ASCEND_HOME_PATH=$(CURDIR)/$(BUILD)/tests/fake_cann ctest --preset $(PRESET) -j2 -LE "netns|slurm"

test-asan: deps
	@test -f build/asan/build.ninja || cmake --preset asan
	cmake --build --preset asan
	ctest --preset asan -j2 -LE "netns|slurm"

# libFuzzer targets (fuzz/): their own clang build in build/fuzz, only the
# sources each parser needs. `make fuzz` runs each target FUZZ_SECONDS on a
# copy of its seed corpus; `make test-fuzz` is the short run of `make test`.
FUZZ_SECONDS ?= 60
FUZZ_TEST_SECONDS ?= 5

fuzz-build: deps
	@test -f build/fuzz/build.ninja || cmake --preset fuzz
	cmake --build --preset fuzz

fuzz: fuzz-build
	fuzz/run.sh build/fuzz $(FUZZ_SECONDS)

test-fuzz: fuzz-build
	fuzz/run.sh build/fuzz $(FUZZ_TEST_SECONDS)

bench: build
	bench/host_copy_vs_memcpy.sh $(XB)
	bench/remote_vs_mpi_get.sh $(XB)
	bench/coll_vs_mpi_allreduce.sh $(XB)
	bench/engine_vs_ucx_perftest.sh $(XB)
	bench/cuda_copy_vs_memcpy_async.sh $(XB)
	@# with a GPU and NVBANDWIDTH=DIR / NCCL_TESTS=DIR; waived otherwise
	bench/cuda_vs_nvbandwidth.sh "$(NVBANDWIDTH)" $(XB)
	bench/engine_cuda_lanes.sh $(XB)
	bench/nccl_vs_nccl_tests.sh "$(NCCL_TESTS)" $(XB)

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf build
