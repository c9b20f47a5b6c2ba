# Thin wrapper: CMake is the build. `make run` and `make test` first check for
# (and as root install) the Debian packages the build needs.
BUILD ?= build
ASAN_BUILD ?= build-asan
MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps build run install path-note test test-asan test-tsan fuzz fuzz-smoke bench format clean

all: build

deps:
	@bash scripts/deps.sh tmux sqlite3 parallel

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# `make run` builds only the program and its plugins; `make test` all.
# It stops at the first merge that runs the sampler (on the default day,
# the finalize): `b` lists the breakpoint, `d` removes it.
RUN_ARGS ?= --break sampling
run: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target mergescope alwayskeep detdrop skywalking
	@$(BUILD)/tui/mergescope tui $(RUN_ARGS)

# `make install`: mergescope into $(PREFIX)/bin and its plugins into
# $(PREFIX)/lib/mergescope/plugins, where the program finds them.
PREFIX ?= $(HOME)/.local
install: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target mergescope alwayskeep detdrop skywalking
	@cmake --install $(BUILD) --prefix $(PREFIX)
	@echo "installed $(PREFIX)/bin/mergescope"
	@$(MAKE) -s path-note PREFIX="$(PREFIX)"

# Says how to put $(PREFIX)/bin on PATH only when no PATH entry is that
# directory (compared as resolved, so a trailing / or a link counts).
path-note:
	@bin=$$(cd "$(PREFIX)/bin" 2>/dev/null && pwd -P || echo "$(PREFIX)/bin"); \
	on=; IFS=:; for p in $$PATH; do \
		[ -n "$$p" ] && [ "$$(cd "$$p" 2>/dev/null && pwd -P)" = "$$bin" ] && on=1; \
	done; \
	[ -n "$$on" ] || echo "$(PREFIX)/bin is not on your PATH: add it (export PATH=\"$(PREFIX)/bin:\$$PATH\") to run mergescope by name"

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DMS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS)

# The threaded modules (engine, chain, staging, merge, replay, shard, the
# fixture build's writer thread) under
# ThreadSanitizer.
TSAN_BUILD ?= build-tsan
TSAN_TESTS ?= test_engine|test_chain|test_staging|test_merge|test_replay|test_freeze|test_shard|test_cli_fixture
test-tsan: deps
	@cmake -S . -B $(TSAN_BUILD) -DMS_TSAN=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS)
	@cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS) -R '^($(TSAN_TESTS))$$'

# Every libFuzzer harness (the `fuzzers` target of tests/fuzz) and the
# seed corpora; `make fuzz-smoke` then runs each briefly (CI does).
FUZZ_RUNS ?= 2000
fuzz:
	@bash scripts/deps.sh clang
	@CC=clang cmake -S . -B build-fuzz -DMS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzzers
	@test -d build-fuzz/corpus-part || build-fuzz/tests/fuzz/fuzz_seeds build-fuzz/corpus-part build-fuzz/corpus-sidx
	@test -d build-fuzz/corpus-names || build-fuzz/tests/fuzz/fuzz_parser_seeds build-fuzz
	@test -d build-fuzz/corpus-chain || build-fuzz/tests/fuzz/fuzz_manifest_seeds build-fuzz
	@test -d build-fuzz/corpus-evdb || build-fuzz/tests/fuzz/fuzz_table_seeds build-fuzz
	@test -d build-fuzz/corpus-mo-result || build-fuzz/tests/fuzz/fuzz_result_seeds build-fuzz
	@echo "run: build-fuzz/tests/fuzz/fuzz_part_reader -max_total_time=600 build-fuzz/corpus-part (see tests/fuzz/README.md)"

fuzz-smoke: fuzz
	@bash tests/fuzz/smoke.sh build-fuzz $(FUZZ_RUNS)

bench: build
	@cmake --build $(BUILD) -j $(JOBS) --target benches

format:
	@git ls-files '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) build-fuzz
