# SPDX-License-Identifier: MIT
#
# Thin wrapper over CMake + Ninja.  The build itself lives in CMakeLists.txt.
#
#   make / make all        build/       RelWithDebInfo (-O2 -g)
#   make test              build/ ctest, then build-asan/ (ASan+UBSan, USTREAMS_DEBUG,
#                          no block cache) ctest
#   make tsan              build-tsan/ (TSan), ctest -L threaded
#   make install PREFIX=D  install to D (default /usr/local)
#   make examples          install to build/stage, build examples/*.c against it
#   make bench             build, run build/bench_micro, then the $(BENCH_SWEEP) hook
#   make venv              .venv with matplotlib (for the bench charts)
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
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# gcc 12's TSan cannot map its shadow under high ASLR entropy on some kernels;
# running without address randomisation avoids that.  Harmless elsewhere.
TSAN_LAUNCH ?= $(shell setarch $$(uname -m) -R true >/dev/null 2>&1 && echo setarch $$(uname -m) -R)

# Bench hooks: BENCH_DEPS are extra prerequisites of `bench` (e.g. venv),
# BENCH_SWEEP is the command run after bench_micro (e.g. the Python sweep).
BENCH_DEPS  ?=
BENCH_SWEEP ?=

EXAMPLES      := $(wildcard examples/*.c)
EXAMPLE_FLAGS ?= -std=c11 -Wall -Wextra -O2 -g $(if $(filter ON,$(WERROR)),-Werror)

FORMAT_DIRS := include src tests tools bench examples
CLANG_FORMAT ?= clang-format

.PHONY: all configure test test-main test-asan tsan install examples bench bench-micro \
        bench-sweep venv format clean distclean

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

install: all
	$(CMAKE) --install $(BUILD) --prefix "$(PREFIX)"

examples:
	@if [ -z "$(EXAMPLES)" ]; then echo "examples: no examples/*.c yet, nothing to build"; exit 0; fi; \
	set -e; \
	$(MAKE) --no-print-directory install PREFIX="$(STAGE)"; \
	mkdir -p $(BUILD)/examples; \
	flags=$$(PKG_CONFIG_PATH="$(STAGE)/lib/pkgconfig" $(PKG_CONFIG) --cflags --libs ustreams); \
	for src in $(EXAMPLES); do \
	    out=$(BUILD)/examples/$$(basename $$src .c); \
	    echo "CC $$src -> $$out"; \
	    $(CC) $(EXAMPLE_FLAGS) $$src $$flags -Wl,-rpath,"$(STAGE)/lib" -o $$out; \
	done

bench: bench-micro bench-sweep

bench-micro: all $(BENCH_DEPS)
	@if [ -x $(BUILD)/bench_micro ]; then $(BUILD)/bench_micro; \
	else echo "bench: $(BUILD)/bench_micro not built (no bench/micro.c yet)"; fi

# Hook for the full sweep (perftest vs pipe/socketpair, charts).  Set
# BENCH_SWEEP (and BENCH_DEPS = venv) when it exists.
bench-sweep: bench-micro
	$(if $(strip $(BENCH_SWEEP)),$(BENCH_SWEEP),@true)

venv: $(VENV)/.stamp

$(VENV)/.stamp:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --upgrade pip
	$(VENV)/bin/pip install matplotlib
	touch $@

format:
	@if command -v $(CLANG_FORMAT) >/dev/null 2>&1; then \
	    find $(FORMAT_DIRS) -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null \
	        | xargs -r $(CLANG_FORMAT) -i; \
	else echo "format: $(CLANG_FORMAT) not found, skipping"; fi

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN)

distclean: clean
	rm -rf $(VENV)
