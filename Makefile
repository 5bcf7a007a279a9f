# Two commands do everything on a fresh Debian 12 machine:
#   make run    install the missing packages that building and running need (apt; root or
#               sudo only when something is missing), configure, build, run the default
#               suite (host backend). `make build` stops after the build.
#   make test   the same, plus the test, lint and scheduler tools (install-deps.sh test),
#               then these stages in order (scripts/test-stages.sh prints each one's time
#               against its share of the 2,700 s budget, and the 30 slowest tests):
#                 lint             the format check and clang-tidy over the tree (make lint)
#                 build-release    the user's build (build/default) with warnings as errors:
#                                  the binary, bench/ and the GPU tests (not the unit tests)
#                 test-release     the release build's own tests: labels netns, slurm,
#                                  install, gpu and release (the manual's examples, what
#                                  cannot run beside the fake CANN)
#                 test-asan        every other test, once, on an ASan + UBSan build
#                                  (build/asan, clang), with the fake CANN of tests/fake_cann
#                                  installed so `auto` finds an accelerator first
#                 test-tsan        the threaded tests on a ThreadSanitizer build (build/tsan, clang)
#                 test-openmpi     the multi-rank tests of every family again, built against
#                                  Open MPI and run under its mpirun (build/openmpi)
#                 test-fuzz        each libFuzzer target for a few seconds (build/fuzz)
# `make lint` checks the format (check-format) and runs clang-tidy (tidy); `make format`
# fixes the format.
PRESET ?= default
BUILD := build/$(PRESET)
XB := $(BUILD)/xferbench
# The peer tools of `make bench` on a GPU, built from their public sources (CONTRIBUTING.md,
# "Speed check against peer tools"): the folder holding nvbandwidth, and nccl-tests'
# build/ folder. Empty: those two comparisons print `waived` with where to get them.
NVBANDWIDTH ?=
NCCL_TESTS ?=

.PHONY: all deps deps-test configure configure-dev build build-dev build-release run test test-release test-asan test-tsan test-openmpi test-fuzz fuzz \
	fuzz-build bench bench-fleet format check-format tidy lint clean

all: build

deps:
	@scripts/install-deps.sh build

deps-test:
	@scripts/install-deps.sh test

# A user's build: the preset as it is (no -Werror; the tests when GoogleTest is there).
configure: deps
	@test -f $(BUILD)/build.ninja || cmake --preset $(PRESET)

build: configure
	cmake --build --preset $(PRESET)

# make test's build of the same folder: warnings as errors and the tests on.
DEV_CACHE := -DXFERBENCH_WERROR=ON -DXFERBENCH_TESTS=ON
configure-dev: deps-test
	@grep -qx 'XFERBENCH_WERROR:BOOL=ON' $(BUILD)/CMakeCache.txt 2>/dev/null && \
	  grep -Eqx 'XFERBENCH_TESTS:[A-Z]+=ON' $(BUILD)/CMakeCache.txt && test -f $(BUILD)/build.ninja || \
	  cmake --preset $(PRESET) $(DEV_CACHE)

build-dev: configure-dev
	cmake --build --preset $(PRESET)

run: build
	$(XB) list --backend host
	$(XB) topo --backend host
	$(XB) copy --backend host
	$(XB) remote --backend host --ranks 2
	$(XB) coll allreduce --backend host -b 64K -e 4M --ranks 2
	$(XB) engine selftest

# Each stage with its share of the budget in seconds (CONTRIBUTING.md, "Build and test").
TEST_STAGES := lint:450 build-release:350 test-release:600 test-asan:900 test-tsan:200 \
	test-openmpi:100 test-fuzz:100
test: deps-test
	@scripts/test-stages.sh $(TEST_STAGES)

# Each pass writes build/junit-<pass>.xml (scripts/slowest_tests.py reads them).
JUNIT = --output-junit $(CURDIR)/build/junit-$(1).xml

# The release build's own tests: those no other pass runs (labels netns, slurm, install, gpu
# and release); every other test runs once, on the ASan build.
RELEASE_LABELS := netns|slurm|install|gpu|release
build-release: configure-dev
	cmake --build --preset $(PRESET) --target xferbench_release_suite

test-release: build-release
	ctest --preset $(PRESET) -j2 -L "$(RELEASE_LABELS)" $(call JUNIT,release)

# With the fake CANN runtime installed (ASCEND_HOME_PATH), so `auto` picks an accelerator
# first: proves no test takes `auto` to mean the host (tests labelled release cannot run so).
# HWLOC_COMPONENTS=-pci,-opencl (the asan test preset): hwloc's pci plugin,
# which Open MPI and libpmix2 pull in (libhwloc-plugins), leaks inside
# libpciaccess and is unloaded before LeakSanitizer reports, so no suppression
# can name it; its opencl plugin (with ocl-icd-libopencl1, which the plugins
# pull in) makes LeakSanitizer's own tracer die (signal 11) at the exit of a
# process that also loaded the CUDA runtime (`topo` under `auto`). The pass
# runs as it does where the plugins are absent, LeakSanitizer on for all.
test-asan: deps-test
	@test -f build/asan/build.ninja || cmake --preset asan
	cmake --build --preset asan
	ASCEND_HOME_PATH=$(CURDIR)/build/asan/tests/fake_cann \
	  ctest --preset asan -j2 -LE "$(RELEASE_LABELS)" $(call JUNIT,asan)

# ThreadSanitizer: the threaded tests (the host copiers' worker pool, the
# liveness watch and its sockets, gemm-ar's crew, the engine server and its
# soak, doctor; the list is the tsan test preset's filter in CMakePresets.json),
# only the binaries they need. Every report is written to $(TSAN_REPORTS)
# (tests/tsan.supp names the uninstrumented libraries it ignores), so one in a
# process that a test script does not check fails the pass too.
TSAN_REPORTS := build/tsan/reports

test-tsan: deps-test
	@test -f build/tsan/build.ninja || cmake --preset tsan
	cmake --build --preset tsan
	@rm -rf $(TSAN_REPORTS)
	@ctest --preset tsan -j2 $(call JUNIT,tsan); rc=$$?; \
	if ls $(TSAN_REPORTS)/* >/dev/null 2>&1; then \
	  cat $(TSAN_REPORTS)/*; echo "test-tsan: ThreadSanitizer reports above (in $(TSAN_REPORTS))" >&2; exit 1; \
	fi; exit $$rc

# Open MPI: the openmpi preset builds against mpicc.openmpi (every object but
# the two MPI sources comes from ccache) and runs the tests labelled openmpi
# (a multi-rank test of every family, the launcher refusals) under
# mpirun.openmpi; the test preset allows root and oversubscription through
# OMPI_* variables.
test-openmpi: deps-test
	@test -f build/openmpi/build.ninja || cmake --preset openmpi $(DEV_CACHE)
	cmake --build --preset openmpi
	ctest --preset openmpi -j2 $(call JUNIT,openmpi)

# libFuzzer targets (fuzz/): their own clang build in build/fuzz, only the
# sources each parser needs. `make fuzz` runs each target FUZZ_SECONDS on a
# copy of its seed corpus; `make test-fuzz` is the short run of `make test`.
FUZZ_SECONDS ?= 60
FUZZ_TEST_SECONDS ?= 5

fuzz-build: deps-test
	@test -f build/fuzz/build.ninja || cmake --preset fuzz
	cmake --build --preset fuzz

fuzz: fuzz-build
	fuzz/run.sh build/fuzz $(FUZZ_SECONDS)

test-fuzz: fuzz-build
	fuzz/run.sh build/fuzz $(FUZZ_TEST_SECONDS)

# The host targets are judged on the median of interleaved rounds, and each
# run three times in a row (bench/repeat.sh prints the spread): a lucky run
# does not pass a target.
BENCH_RUNS ?= 3
bench: deps-test build
	bench/repeat.sh $(BENCH_RUNS) bench/host_copy_vs_memcpy.sh $(XB)
	bench/repeat.sh $(BENCH_RUNS) bench/host_copy_sweep.sh $(XB)
	bench/remote_vs_mpi_get.sh $(XB)
	bench/coll_vs_mpi_allreduce.sh $(XB)
	bench/repeat.sh $(BENCH_RUNS) bench/engine_vs_ucx_perftest.sh $(XB)
	bench/cuda_copy_vs_memcpy_async.sh $(XB)
	@# with a GPU and NVBANDWIDTH=DIR / NCCL_TESTS=DIR; waived otherwise
	bench/cuda_vs_nvbandwidth.sh "$(NVBANDWIDTH)" $(XB)
	bench/engine_cuda_lanes.sh $(XB)
	bench/nccl_vs_nccl_tests.sh "$(NCCL_TESTS)" $(XB)
	$(MAKE) bench-fleet

# fleet's judge on simulated fleets of 64 to 1,024 hosts (docs/RESULTS.md): every pair and
# --quick, at the noise measured in network namespaces (cv 0.15) and with 6 ranks on one
# 2-core machine (cv 0.30), transient dips at 1 % (none seen in 300 records: the 95 % bound).
FLEET_SIM_TRIALS ?= 100
bench-fleet: build
	cmake --build $(BUILD) --target fleet_sim
	for cv in 0.15 0.30; do for q in "" --quick; do \
	  $(BUILD)/bench/fleet_sim --hosts 64,256,1024 --trials $(FLEET_SIM_TRIALS) --cv $$cv \
	    --outliers 0.01 --pair-bytes 435 --row-bytes 440 $$q || exit 1; done; done

# Lint: the format check (clang-format 14, .clang-format) and clang-tidy
# (.clang-tidy) over build/default's compile_commands.json.
format:
	clang-format-14 -i $$(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')

check-format: deps-test
	scripts/format-check.sh

tidy: configure-dev
	scripts/tidy.sh $(BUILD)

lint: check-format tidy

clean:
	rm -rf build
