#!/usr/bin/env bash
# Runs libFuzzer targets one after another (make fuzz):
#   tests/scripts/fuzz.sh BUILD_DIR SECONDS KEEP [TARGET...]
# Each fuzz_TARGET (every one BUILD_DIR/tests/fuzz holds when none is named) runs SECONDS
# under its sanitizers from its kept corpus (tests/fuzz/corpus/TARGET; the scenario target
# also from scenarios/). New inputs go to BUILD_DIR/found/TARGET, or into the kept corpus
# when KEEP is 1. A crash, a hang (a unit over 10 s), a leak or a sanitizer report stops
# the run: the input is left as BUILD_DIR/fuzz_TARGET-crash-* (or -timeout-, -leak-) and
# the status is 1.
set -euo pipefail
build=$1 seconds=$2 keep=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$build"/tests/fuzz/fuzz_*; do [ -x "$f" ] && targets+=("${f##*/fuzz_}"); done
fi
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets in $build/tests/fuzz" >&2; exit 2; }
for t in "${targets[@]}"; do
  kept=$root/tests/fuzz/corpus/$t
  if [ "$keep" = 1 ]; then found=$kept; seeds=(); else found=$build/found/$t; seeds=("$kept"); fi
  [ "$t" = scenario ] && seeds+=("$root/scenarios")
  mkdir -p "$found"
  echo "fuzz_$t: $seconds s"
  status=0
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz_$t-" "$found" "${seeds[@]}" >"$build/fuzz_$t.log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)' "$build/fuzz_$t.log" |
    sed 's/^/  /' || true
  if [ "$status" -ne 0 ]; then
    grep -E '==[0-9]+==|SUMMARY|runtime error|^fuzz_|Test unit written' "$build/fuzz_$t.log" | sed 's/^/  /' || true
    echo "fuzz_$t failed (status $status): see $build/fuzz_$t.log"
    exit 1
  fi
done
