# SPDX-License-Identifier: MIT
#
# Thin wrapper over CMake + Ninja.  The build itself lives in CMakeLists.txt.
#
#   make / make all        build/       RelWithDebInfo (-O2 -g)
#   make test              build/ ctest, then build-asan/ (ASan+UBSan, USTREAMS_DEBUG,
#                          no block cache) ctest
#   make tsan              build-tsan/ (TSan), ctest -L threaded
#   make install PREFIX=D  install to D (default /usr/local): bin/ustreams, lib/, headers
#                          in D/include/ustreams, pkg-config and CMake package
#                          (docs/PACKAGING.md)
#   make examples          install to build/stage, build examples/*.c against it
#                          (examples/xti_*.c with pkg-config xnet: libxnet, XTI)
#   make bench             venv, build, build/bench_micro --quick, then the perftest sweep
#                          (bench/README.md): writes of 1 B to 64 KiB (QUICK=1: to 4 KiB),
#                          results in bench/out/ (git-ignored: the checkout stays clean);
#                          REPEAT=N runs per point; installs libzmq3-dev for the ZeroMQ
#                          peer if missing (as root with apt-get; BENCH_ZMQ_INSTALL=no: never);
#                          then the netperf sweep (XTI against sockets, ~2 min; QUICK=1 fewer
#                          sizes); between them the cross-process sweep (perftest --procs
#                          against pipe(2) and AF_UNIX, ~1 min).  make bench-netperf,
#                          make bench-procs: one sweep alone.  The sweeps run
#                          build/ustreams-bench, the bench's copy of the command (with
#                          the ZeroMQ peer where libzmq is found; never installed)
#   make bench-publish     copy bench/out/ (the last make bench) into the tracked
#                          bench/results/: the only target that changes tracked files
#   make venv              .venv with bench/requirements.txt (matplotlib, for the charts)
#   make fuzz              build-fuzz/ (clang, libFuzzer, ASan+UBSan): run each
#                          tests/fuzz/fuzz_*.c target FUZZ_SECONDS (default 60) from its
#                          seed corpus (tests/fuzz/README.md); installs clang if missing
#   make format            clang-format -i (if clang-format exists)
#   make clean / distclean
#
# CI=true in the environment adds USTREAMS_WERROR=ON to every configure.

CMAKE      ?= cmake
CTEST      ?= ctest
CC         ?= cc
PKG_CONFIG ?= pkg-config
PYTHON     ?= python3
PREFIX     ?= /usr/local
JOBS       ?= 2

BUILD      := build
BUILD_ASAN := build-asan
BUILD_TSAN := build-tsan
BUILD_FUZZ := build-fuzz
STAGE      := $(CURDIR)/$(BUILD)/stage
VENV       := .venv

ifneq ($(filter true TRUE True 1 yes,$(CI)),)
WERROR ?= ON
else
WERROR ?= OFF
endif

# What ctest does when a tree has no test at all: error (the main suites must
# have tests) / ignore (the threaded subset may legitimately be empty).
NO_TESTS      ?= error
TSAN_NO_TESTS ?= ignore

CMAKE_COMMON := -G Ninja -DUSTREAMS_WERROR=$(WERROR) $(CMAKE_ARGS)
# Sanitizer trees: -O1 -g and no NDEBUG, so library asserts stay live.
SAN_CFLAGS   ?= -O1 -g
CMAKE_SAN    := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(SAN_CFLAGS)"

CTEST_ARGS   := --output-on-failure --parallel $(JOBS) $(CTEST_EXTRA)

ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp
# gcc 12's TSan cannot map its shadow under high ASLR entropy on some kernels;
# running without address randomisation avoids that.  Harmless elsewhere.
TSAN_LAUNCH ?= $(shell setarch $$(uname -m) -R true >/dev/null 2>&1 && echo setarch $$(uname -m) -R)

# Bench hooks: BENCH_DEPS are extra prerequisites of `bench` (the venv),
# BENCH_SWEEP is the command run after bench_micro (the Python sweep of
# `build/ustreams perftest` against pipe(2), AF_UNIX socketpairs and ZeroMQ inproc
# PAIR, with the charts and, per message at 1, 64, 4096 and 65536 B, the system
# calls, CPU time, and instructions and cycles where the PMU offers them: perf stat,
# bench/sweep_costs.py).  The sweep goes to 64 KiB writes; QUICK=1 stops it at
# 4 KiB (FULL=1, once needed for 64 KiB, changes nothing); REPEAT=N runs each
# point N times.  BENCH_PERF=no: no run under perf stat (both sweeps; the report
# says "skipped").
BENCH_PERF ?= yes
BENCH_PERF_ARG = $(if $(filter no,$(BENCH_PERF)),--no-syscalls)
BENCH_MICRO_CSV := $(BUILD)/bench_micro.csv
# Where the sweeps write (git-ignored); `make bench-publish` copies it to the
# tracked BENCH_PUBLISHED.  BENCH_CMD is the command they run: the bench's
# build/ustreams-bench (CMakeLists.txt: with the ZeroMQ peer where libzmq was
# found, else a link to build/ustreams), so that the installed command never
# links libzmq.
BENCH_OUT       ?= bench/out
BENCH_PUBLISHED := bench/results
BENCH_CMD       ?= $(BUILD)/ustreams-bench
BENCH_DEPS  ?= venv
BENCH_SWEEP ?= QUICK="$(QUICK)" FULL="$(FULL)" $(VENV)/bin/python bench/sweep.py \
               --perftest "$(BENCH_CMD) perftest" --out "$(BENCH_OUT)" \
               $(if $(REPEAT),--repeat $(REPEAT)) --micro-csv $(BENCH_MICRO_CSV) $(BENCH_PERF_ARG)
# perftest's ZeroMQ peer is built where pkg-config finds libzmq (CMakeLists.txt).
# When it does not, bench-zmq installs Debian's libzmq3-dev if it runs as root
# with apt-get (as fuzz-build does for clang); otherwise, or if that fails, the
# peer is left out and the report says so.  BENCH_ZMQ_INSTALL=no never installs.
BENCH_ZMQ_INSTALL ?= yes
# BENCH_PROCS is the command run after the pipe sweep: bench/procs_sweep.py,
# `perftest --procs` (writer and reader processes) for ustreams, pipe(2) and
# AF_UNIX, ratios to pipe(2) between processes; procs*.csv, procs.md and
# procs_throughput.png beside the pipe sweep's, a section in its results.md and
# latest.md (~45-60 s, and ~25 s for the counts per message under perf stat,
# procs_costs.png; QUICK=1 to 4 KiB).  ustreams is reported n/a, not failed,
# while its pipes do not cross fork().  Empty: skipped.
BENCH_PROCS ?= QUICK="$(QUICK)" $(VENV)/bin/python bench/procs_sweep.py \
               --perftest "$(BENCH_CMD) perftest" --out "$(BENCH_OUT)" $(if $(REPEAT),--repeat $(REPEAT)) \
               $(BENCH_PERF_ARG)
# BENCH_NETPERF is the command run after the pipe sweep: bench/netperf_sweep.py,
# `build/ustreams netperf` over XTI (/dev/udp, /dev/tcp) and over sockets, with
# bench_xti_open; results beside the pipe sweep's (bench/out/<date>/netperf*,
# bench/out/latest-netperf.md).  QUICK=1 runs fewer sizes.  Empty: skipped.
BENCH_NETPERF ?= QUICK="$(QUICK)" $(VENV)/bin/python bench/netperf_sweep.py \
                 --netperf "$(BENCH_CMD) netperf" --xti-open $(BUILD)/bench_xti_open \
                 --out "$(BENCH_OUT)"

EXAMPLES      := $(wildcard examples/*.c)
EXAMPLE_FLAGS ?= -std=c11 -Wall -Wextra -O2 -g $(if $(filter ON,$(WERROR)),-Werror)

FORMAT_DIRS := include src tests tools bench examples
CLANG_FORMAT ?= clang-format

.PHONY: all configure test test-main test-asan tsan fuzz fuzz-build install examples bench \
        bench-zmq bench-build bench-micro bench-sweep bench-procs bench-netperf bench-publish \
        venv format clean \
        distclean

all: configure
	$(CMAKE) --build $(BUILD)

configure:
	$(CMAKE) -S . -B $(BUILD) $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=RelWithDebInfo

test: test-main test-asan

test-main: all
	cd $(BUILD) && $(CTEST) $(CTEST_ARGS) --no-tests=$(NO_TESTS)

test-asan:
	$(CMAKE) -S . -B $(BUILD_ASAN) $(CMAKE_COMMON) $(CMAKE_SAN) \
	    -DUSTREAMS_SANITIZE=address,undefined -DUSTREAMS_DEBUG=ON -DUSTREAMS_BLOCK_CACHE=OFF
	$(CMAKE) --build $(BUILD_ASAN)
	cd $(BUILD_ASAN) && $(ASAN_ENV) $(CTEST) $(CTEST_ARGS) --no-tests=$(NO_TESTS)

tsan:
	$(CMAKE) -S . -B $(BUILD_TSAN) $(CMAKE_COMMON) $(CMAKE_SAN) -DUSTREAMS_SANITIZE=thread
	$(CMAKE) --build $(BUILD_TSAN)
	cd $(BUILD_TSAN) && $(TSAN_ENV) $(TSAN_LAUNCH) $(CTEST) $(CTEST_ARGS) -L threaded \
	    --no-tests=$(TSAN_NO_TESTS)

# Fuzzing (tests/fuzz/README.md).  FUZZ_CC is the clang to use; when it is
# missing, Debian's clang and libclang-rt-<version>-dev (libFuzzer) are
# installed with apt-get, or the target stops saying what to install.  Each
# target runs FUZZ_SECONDS on a scratch copy of its seed corpus
# (build-fuzz/corpus/NAME, so the repository's stays small; its known/
# findings are left out); crashes, leaks and timeouts are written to
# build-fuzz/artifacts/.  FUZZ_TARGETS picks targets, FUZZ_ARGS adds libFuzzer
# options.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(notdir $(basename $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_ARGS    ?=
FUZZ_ENV     := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

fuzz-build:
	@if ! command -v $(FUZZ_CC) >/dev/null 2>&1 || \
	    ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' | \
	      $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1; then \
	    echo "fuzz: $(FUZZ_CC) with libFuzzer not found; installing clang and libclang-rt-dev"; \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang && \
	          v=$$(clang --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n1) && \
	          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-rt-$$v-dev; } \
	        || { echo "fuzz: apt-get install failed" >&2; exit 1; }; \
	    else \
	        echo "fuzz: install clang and its libFuzzer (Debian 12: apt-get install clang" \
	             "libclang-rt-14-dev), or set FUZZ_CC" >&2; exit 1; \
	    fi; \
	fi
	CC=$(FUZZ_CC) $(CMAKE) -S . -B $(BUILD_FUZZ) $(CMAKE_COMMON) $(CMAKE_SAN) -DUSTREAMS_FUZZ=ON \
	    -DUSTREAMS_SANITIZE=address,undefined -DUSTREAMS_DEBUG=ON -DUSTREAMS_BLOCK_CACHE=OFF
	$(CMAKE) --build $(BUILD_FUZZ) --target $(FUZZ_TARGETS)

fuzz: fuzz-build
	@set -e; mkdir -p $(BUILD_FUZZ)/artifacts; \
	for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(BUILD_FUZZ)/corpus/$$t; \
	    find tests/fuzz/corpus/$$t -maxdepth 1 -type f -exec cp -n {} $(BUILD_FUZZ)/corpus/$$t/ \; ; \
	    echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	    $(FUZZ_ENV) $(BUILD_FUZZ)/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=30 \
	        -artifact_prefix=$(BUILD_FUZZ)/artifacts/$$t- $(FUZZ_ARGS) \
	        $(BUILD_FUZZ)/corpus/$$t; \
	done

install: all
	$(CMAKE) --install $(BUILD) --prefix "$(PREFIX)"

examples:
	@if [ -z "$(EXAMPLES)" ]; then echo "examples: no examples/*.c yet, nothing to build"; exit 0; fi; \
	set -e; \
	$(MAKE) --no-print-directory install PREFIX="$(STAGE)"; \
	mkdir -p $(BUILD)/examples; \
	flags=$$(PKG_CONFIG_PATH="$(STAGE)/lib/pkgconfig" $(PKG_CONFIG) --cflags --libs ustreams); \
	xflags=$$(PKG_CONFIG_PATH="$(STAGE)/lib/pkgconfig" $(PKG_CONFIG) --cflags --libs xnet); \
	for src in $(EXAMPLES); do \
	    out=$(BUILD)/examples/$$(basename $$src .c); f="$$flags"; extra=""; \
	    case $$(basename $$src) in xti_*) f="$$xflags -pthread";; esac; \
	    case $$(basename $$src) in \
	    xti_echo_server.c) extra="examples/xti_echo_client.c -DXTI_ECHO_NO_MAIN";; esac; \
	    echo "CC $$src $$extra -> $$out"; \
	    $(CC) $(EXAMPLE_FLAGS) $$src $$extra $$f -Wl,-rpath,"$(STAGE)/lib" -o $$out; \
	done

# The cross-process and netperf sweeps after the pipe sweep, not beside it (two
# sweeps at once would measure each other); `make bench-procs` and
# `make bench-netperf` run one alone.
bench: bench-micro bench-sweep
	@$(MAKE) --no-print-directory bench-procs
	@$(MAKE) --no-print-directory bench-netperf

bench-procs: bench-build $(BENCH_DEPS)
	$(if $(strip $(BENCH_PROCS)),$(BENCH_PROCS),@true)

bench-netperf: bench-build $(BENCH_DEPS)
	$(if $(strip $(BENCH_NETPERF)),$(BENCH_NETPERF),@true)

bench-zmq:
	@if [ "$(BENCH_ZMQ_INSTALL)" != no ] && ! $(PKG_CONFIG) --exists libzmq 2>/dev/null; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	        echo "bench: no libzmq; installing libzmq3-dev for perftest's ZeroMQ peer"; \
	        { apt-get update -qq && \
	          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libzmq3-dev; } >/dev/null \
	        || echo "bench: apt-get install libzmq3-dev failed: no ZeroMQ peer" >&2; \
	    else \
	        echo "bench: no libzmq (Debian: apt-get install libzmq3-dev): no ZeroMQ peer"; \
	    fi; \
	fi

# The build after bench-zmq, so that the configure sees a libzmq just installed.
bench-build: bench-zmq
	@$(MAKE) --no-print-directory all

bench-micro: bench-build $(BENCH_DEPS)
	@rm -f $(BENCH_MICRO_CSV)
	@if [ -x $(BUILD)/bench_micro ]; then $(BUILD)/bench_micro --quick --csv $(BENCH_MICRO_CSV); \
	else echo "bench: $(BUILD)/bench_micro not built (no bench/micro.c yet)"; fi

# The sweep (bench/sweep.py): results in bench/out/<date>/ and
# bench/out/latest.md (a missing micro-benchmark CSV is skipped).
bench-sweep: bench-micro
	$(if $(strip $(BENCH_SWEEP)),$(BENCH_SWEEP),@true)

# The published results: what the last `make bench` wrote to bench/out/
# (every dated folder, latest*.md, latest/), copied over bench/results/.  The
# README's results table is written by hand from them (docs/PERFORMANCE.md).
bench-publish:
	@if [ ! -f "$(BENCH_OUT)/latest.md" ]; then \
	    echo "bench-publish: no $(BENCH_OUT)/latest.md: run make bench first" >&2; exit 1; fi
	mkdir -p $(BENCH_PUBLISHED)
	cp -R $(BENCH_OUT)/. $(BENCH_PUBLISHED)/
	@echo "bench-publish: $(BENCH_OUT)/ copied to $(BENCH_PUBLISHED)/; review with git status"

venv: $(VENV)/.stamp

# python3 -m venv needs Debian's python3-venv; a failed creation leaves a
# half-made .venv, so remove it and say what to install.
$(VENV)/.stamp: bench/requirements.txt
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	    echo "make: cannot create $(VENV) with '$(PYTHON) -m venv'." >&2; \
	    echo "      Install the venv module (Debian/Ubuntu: apt-get install python3-venv)" >&2; \
	    echo "      and run make bench again." >&2; exit 1; }
	$(VENV)/bin/pip install --quiet -r bench/requirements.txt
	touch $@

format:
	@if command -v $(CLANG_FORMAT) >/dev/null 2>&1; then \
	    find $(FORMAT_DIRS) -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null \
	        | xargs -r $(CLANG_FORMAT) -i; \
	else echo "format: $(CLANG_FORMAT) not found, skipping"; fi

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_FUZZ)

distclean: clean
	rm -rf $(VENV)
