#!/usr/bin/env bash
# Runs the libFuzzer harnesses of a -DUDIAG_FUZZ=ON build (docs/fuzzing.md).
#
#   scripts/run_fuzzers.sh BUILD_DIR SECONDS [HARNESS...]   (default: all)
#
# Each harness runs SECONDS from its seeds (fuzz/corpus/<harness>/, never
# modified) plus what earlier runs found (BUILD_DIR/corpus/<harness>/).
# A crash, leak or sanitizer report leaves its input in
# BUILD_DIR/artifacts/ and the script exits 1 after running the others.
set -uo pipefail

build_dir=${1:?usage: run_fuzzers.sh BUILD_DIR SECONDS [HARNESS...]}
seconds=${2:?usage: run_fuzzers.sh BUILD_DIR SECONDS [HARNESS...]}
shift 2
source_dir=$(cd "$(dirname "$0")/.." && pwd)

harnesses=("$@")
if [[ ${#harnesses[@]} -eq 0 ]]; then
  for bin in "$build_dir"/bin/*_fuzzer; do harnesses+=("$(basename "$bin")"); done
fi

failed=()
mkdir -p "$build_dir/artifacts"
for name in "${harnesses[@]}"; do
  bin=$build_dir/bin/$name
  seeds=$source_dir/fuzz/corpus/$name
  found=$build_dir/corpus/$name
  log=$build_dir/artifacts/$name.log
  if [[ ! -x "$bin" || ! -d "$seeds" ]]; then
    echo "run_fuzzers: $name: no harness at $bin or no seeds in $seeds" >&2
    failed+=("$name")
    continue
  fi
  mkdir -p "$found"
  printf 'fuzz %-32s %ss ... ' "$name" "$seconds"
  if "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
       -artifact_prefix="$build_dir/artifacts/$name-" "$found" "$seeds" >"$log" 2>&1; then
    echo "ok ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}') runs," \
         "$(find "$found" -type f | wc -l) inputs kept)"
  else
    echo "FAILED (log: $log)"
    grep -m1 -A25 'ERROR\|runtime error\|==[0-9]*==' "$log" >&2
    failed+=("$name")
  fi
done

if [[ ${#failed[@]} -ne 0 ]]; then
  echo "run_fuzzers: failed: ${failed[*]} (inputs in $build_dir/artifacts/)" >&2
  exit 1
fi
