# udiag: thin wrappers around CMake, Ninja and ctest. `make help` lists them.
#
# Every target first installs the Debian packages it needs (only the missing
# ones: scripts/install-deps.sh), then configures its build directory once and
# lets Ninja rebuild only what changed.

SHELL := /bin/bash
.DEFAULT_GOAL := all
# Each step runs Ninja/ctest in parallel itself; the steps run in order.
.NOTPARALLEL:

BUILD_TYPE   ?= RelWithDebInfo
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX       ?= /usr/local
CMAKE_ARGS   ?=
CTEST_JOBS   ?= 2
TEST_TIMEOUT ?= 300
CTEST_ARGS   ?=
TSAN_LABEL   ?= concurrency
TSAN_TARGETS ?= ring_concurrency_unittests producer_concurrency_unittests udiagd mmio_concurrency_unittests \
                mmio_emulator_atomicity_unittests mmiotrace_concurrency_unittests record_block_writer_unittests \
                service_page_file_writer_unittests

BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
TSAN_DIR  ?= build-tsan
BENCH_DIR ?= build-bench
FUZZ_DIR  ?= build-fuzz
# Seconds each libFuzzer harness runs: `make fuzz`, and `make test` (test-fuzz).
FUZZ_SECONDS      ?= 60
FUZZ_TEST_SECONDS ?= 3
# Seconds `make soak` runs (scripts/soak.sh reads SOAK_* for the rest).
SOAK_SECONDS      ?= 60

# Package groups of scripts/install-deps.sh that each kind of target needs.
# `fuse` (libfuse3, Zydis) is part of building: the FUSE front end and the
# access probes link them.
DEPS_BUILD ?= build fuse
DEPS_TEST  ?= $(DEPS_BUILD) test clickhouse
DEPS_BENCH ?= $(DEPS_BUILD) bench clickhouse
DEPS_FUZZ  ?= $(DEPS_BUILD) fuzzing
INSTALL_DEPS := bash scripts/install-deps.sh

# Sanitizer run-time options (override on the command line if needed).
ASAN_OPTIONS  ?= detect_leaks=1:check_initialization_order=1:strict_init_order=1
UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
TSAN_OPTIONS  ?= halt_on_error=1:second_deadlock_stack=1

CTEST := ctest --output-on-failure -j $(CTEST_JOBS) --timeout $(TEST_TIMEOUT) $(CTEST_ARGS)

# $(call configure,DIR,CMAKE OPTIONS): runs CMake only when DIR has no
# build.ninja yet or the options changed since the last configure; after that
# `cmake --build` re-runs CMake by itself whenever a CMakeLists.txt changes.
define configure
	@args='-G Ninja $(2) $(CMAKE_ARGS)'; \
	if [[ ! -f $(1)/build.ninja || "$$(cat $(1)/.udiag-configure-args 2>/dev/null)" != "$$args" ]]; then \
	  echo "== cmake -S . -B $(1) $$args"; \
	  cmake -S . -B $(1) $$args || { \
	    echo "make: configuring $(1) failed (if it was made by another generator: make clean)" >&2; exit 1; }; \
	  echo "$$args" > $(1)/.udiag-configure-args; \
	fi
endef

# $(call build,DIR)
define build
	cmake --build $(1) -j $(JOBS)
endef

.PHONY: all build demo test test-plain test-asan test-tsan bench install clean help \
        fuzz fuzz-build test-fuzz soak deps deps-build deps-test deps-bench deps-fuzz

## all: install missing build packages and build everything in build/
all: build

build: deps-build
	$(call configure,$(BUILD_DIR),-DCMAKE_BUILD_TYPE=$(BUILD_TYPE))
	$(call build,$(BUILD_DIR))

## demo: build, start a private udiagd, trace an example program, show its events
demo: build
	bash scripts/demo.sh $(BUILD_DIR)

## test: build and run all tests: plain, ASan+UBSan, TSan (concurrency tests), then each fuzzer briefly
test: deps-test test-plain test-asan test-tsan test-fuzz

## test-plain: the normal build's tests (build/)
test-plain: deps-test
	$(call configure,$(BUILD_DIR),-DCMAKE_BUILD_TYPE=$(BUILD_TYPE))
	$(call build,$(BUILD_DIR))
	$(CTEST) --test-dir $(BUILD_DIR) --no-tests=error

## test-asan: every test under AddressSanitizer + UBSan (build-asan/)
test-asan: deps-test
	$(call configure,$(ASAN_DIR),-DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DUDIAG_SANITIZE=address)
	$(call build,$(ASAN_DIR))
	ASAN_OPTIONS='$(ASAN_OPTIONS)' UBSAN_OPTIONS='$(UBSAN_OPTIONS)' \
	  $(CTEST) --test-dir $(ASAN_DIR) --no-tests=error

## test-tsan: the tests labelled concurrency (TSAN_LABEL) under ThreadSanitizer (build-tsan/)
# Only what those tests need is built under TSan.
test-tsan: deps-test
	$(call configure,$(TSAN_DIR),-DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DUDIAG_SANITIZE=thread)
	cmake --build $(TSAN_DIR) -j $(JOBS) --target $(TSAN_TARGETS)
	@n=$$(ctest --test-dir $(TSAN_DIR) -N -L '$(TSAN_LABEL)' | sed -n 's/^Total Tests: *//p'); \
	if [[ "$${n:-0}" == 0 ]]; then \
	  echo "make: no test is labelled '$(TSAN_LABEL)' in $(TSAN_DIR)" >&2; exit 1; \
	fi
	# Under TSan everything runs 5-15x slower: the clients' bound on the daemon's
	# silence (UDIAG_TIMEOUT_MS, 5 s) is stretched likewise.
	UDIAG_TIMEOUT_MS=60000 TSAN_OPTIONS='$(TSAN_OPTIONS)' $(CTEST) --test-dir $(TSAN_DIR) -L '$(TSAN_LABEL)'

## fuzz-build: the libFuzzer harnesses of fuzz/ (clang, ASan+UBSan, build-fuzz/)
# Only the harnesses and the libraries they fuzz are built (at -O1 with line
# tables only: see CMakeLists.txt).
fuzz-build: deps-fuzz
	$(call configure,$(FUZZ_DIR),-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
	  -DUDIAG_FUZZ=ON -DUDIAG_BUILD_TESTS=OFF)
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzzers

## fuzz: run every fuzz harness FUZZ_SECONDS seconds (findings in build-fuzz/artifacts/)
fuzz: fuzz-build
	bash scripts/run_fuzzers.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

## test-fuzz: run every fuzz harness FUZZ_TEST_SECONDS seconds, so that none rots
test-fuzz: fuzz-build
	bash scripts/run_fuzzers.sh $(FUZZ_DIR) $(FUZZ_TEST_SECONDS)

## soak: 100 producers x 4 threads, producers and udiagd killed at random, SOAK_SECONDS; prints leaks and losses
soak: build
	bash scripts/soak.sh $(BUILD_DIR) $(SOAK_SECONDS)

## bench: Release build with benchmarks (build-bench/), then bench/run_bench.sh
bench: deps-bench
	$(call configure,$(BENCH_DIR),-DCMAKE_BUILD_TYPE=Release -DUDIAG_BUILD_BENCH=ON -DUDIAG_BUILD_TESTS=OFF)
	$(call build,$(BENCH_DIR))
	@if [[ ! -f bench/run_bench.sh ]]; then echo "make: bench/run_bench.sh does not exist yet" >&2; exit 1; fi
	bash bench/run_bench.sh $(abspath $(BENCH_DIR))

## install: build, then install into PREFIX (default /usr/local; DESTDIR honoured)
install: build
	DESTDIR='$(DESTDIR)' cmake --install $(BUILD_DIR) --prefix $(abspath $(PREFIX))

## clean: remove every build directory
clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(BENCH_DIR) $(FUZZ_DIR)

## deps: install every missing Debian package of every group
deps:
	$(INSTALL_DEPS) all

deps-build:
	$(INSTALL_DEPS) $(DEPS_BUILD)
deps-test:
	$(INSTALL_DEPS) $(DEPS_TEST)
deps-bench:
	$(INSTALL_DEPS) $(DEPS_BENCH)
deps-fuzz:
	$(INSTALL_DEPS) $(DEPS_FUZZ)

## help: this list
help:
	@echo "udiag make targets:"
	@sed -n 's/^## \([^:]*\): /  \1\t/p' $(MAKEFILE_LIST) | expand -t 16
	@echo
	@echo "Variables (make VAR=value ...):"
	@echo "  BUILD_TYPE    CMake build type of build/, build-asan/, build-tsan/ [$(BUILD_TYPE)]"
	@echo "  JOBS          parallel compile jobs [$(JOBS)]"
	@echo "  PREFIX        install prefix [$(PREFIX)]; DESTDIR for staged installs"
	@echo "  CMAKE_ARGS    extra options for every configure [$(CMAKE_ARGS)]"
	@echo "  CTEST_JOBS    parallel tests [$(CTEST_JOBS)];  TEST_TIMEOUT  seconds per test [$(TEST_TIMEOUT)]"
	@echo "  CTEST_ARGS    extra ctest options, e.g. CTEST_ARGS='-R ring'"
	@echo "  FUZZ_SECONDS  seconds per fuzz harness for make fuzz [$(FUZZ_SECONDS)]"
	@echo "  FUZZ_TEST_SECONDS  seconds per fuzz harness in make test [$(FUZZ_TEST_SECONDS)]"
	@echo "  SOAK_SECONDS  seconds make soak runs [$(SOAK_SECONDS)] (more SOAK_* in docs/testing.md)"
	@echo "  UDIAG_SKIP_DEPS=1  do not check or install Debian packages"
