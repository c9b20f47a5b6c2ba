#!/usr/bin/env bash
# Short fixed runs of every libFuzzer harness over its seed corpus, for CI
# (`make fuzz-smoke`): a harness that no longer links, or an input an easy
# mutation of a seed turns into a crash, fails the build. New inputs go to
# a scratch directory, so the seed corpora stay as written. Long runs stay
# manual (tests/fuzz/README.md).
#
# Usage: tests/fuzz/smoke.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:?usage: smoke.sh BUILD_DIR [RUNS]}
runs=${2:-2000}
bin=$build/tests/fuzz
# harness:seed corpus (empty: start from nothing)
pairs=(
	fuzz_part_reader:corpus-part
	fuzz_sidx_reader:corpus-sidx
	fuzz_part_dir:
	fuzz_shard_snapshot:corpus-shard
	fuzz_checkpoint_state:
	fuzz_frozen:corpus-frozen
	fuzz_oracle_table:corpus-oracle
	fuzz_breakpoint:corpus-bp
	fuzz_tui_input:corpus-tui
	fuzz_cli:corpus-cli
	fuzz_fixture_args:
	fuzz_manifest:corpus-manifest
	fuzz_block_ledgers:corpus-blkled
	fuzz_chain_spec:corpus-chain
	fuzz_plugin_config:
	fuzz_records:corpus-records
	fuzz_proc:corpus-proc
	fuzz_tui_names:corpus-names
	fuzz_evdb:corpus-evdb
	fuzz_merge_once_result:corpus-mo-result
)
# Every harness built must be in the list above.
for exe in "$bin"/fuzz_*; do
	name=$(basename "$exe")
	case "$name" in
	fuzz_seeds | fuzz_parser_seeds | fuzz_manifest_seeds | fuzz_table_seeds | \
		fuzz_result_seeds)
		continue
		;;
	esac
	[ -x "$exe" ] && [ -f "$exe" ] || continue
	found=0
	for p in "${pairs[@]}"; do
		[ "${p%%:*}" = "$name" ] && found=1
	done
	if [ $found -eq 0 ]; then
		echo "fuzz smoke: $name is built but not run; add it to $0" >&2
		exit 1
	fi
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/msfuzz-smoke-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
fail=0
for p in "${pairs[@]}"; do
	h=${p%%:*}
	corpus=${p#*:}
	if [ ! -x "$bin/$h" ]; then
		echo "fuzz smoke: $bin/$h is missing (make fuzz)" >&2
		fail=1
		continue
	fi
	seeds=()
	if [ -n "$corpus" ]; then
		if [ ! -d "$build/$corpus" ]; then
			echo "fuzz smoke: seed corpus $build/$corpus missing" >&2
			fail=1
			continue
		fi
		seeds=("$build/$corpus")
	fi
	mkdir -p "$scratch/$h"
	start=$(date +%s)
	if "$bin/$h" -runs="$runs" -seed=1 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$scratch/$h-" "$scratch/$h" "${seeds[@]}" \
		>"$scratch/$h.log" 2>&1; then
		echo "fuzz smoke: $h: $runs runs, $(($(date +%s) - start)) s"
	else
		echo "fuzz smoke: $h FAILED; last lines of its log:" >&2
		tail -n 30 "$scratch/$h.log" >&2
		for a in "$scratch/$h"-*; do
			[ -e "$a" ] && cp "$a" "$build/" &&
				echo "  input kept as $build/$(basename "$a")" >&2
		done
		fail=1
	fi
done
exit $fail
