#!/bin/sh
# The RTL CQ writer in the loop against the TLM one, on every shipped scenario and seed:
#   tests/scripts/cq_writer_equivalence.sh build/model/system/irdma-sim-run OUT [SEEDS]
# (SEEDS: "1 2 3 ..." , 1-10 when absent). For each, three runs: tlm, the reference; rtl
# (the RTL's bytes, its cycles the engine's clock) and rtl:model (the RTL's bytes, the
# stage costs the clock). The stage costs being the RTL's cycles charged where it spends
# them, both RTL runs must leave the TLM run's outputs byte for byte (completions.jsonl,
# trace.jsonl with every DMA at its picosecond, coverage.json, and the report but for its
# wall time and the RTL's own section, which must be there: its lock-step scoreboard
# compared every request).
# A run the lock-step scoreboard or an RTL assertion stopped exits 3: a failure here.
set -eu
run=$1 out=$2 seeds=${3:-"1 2 3 4 5 6 7 8 9 10"}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
failures=0 runs=0
strip() { /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("wall_time_s", "cq_writer"): r.pop(k, None)
print(json.dumps(r, sort_keys=True))' "$1"; }
for scenario in "$root"/scenarios/*.yaml; do
  name=$(basename "$scenario" .yaml)
  for seed in $seeds; do
    base="$out/$name-seed$seed"
    for w in tlm rtl:model rtl; do
      dir="$base-$(echo "$w" | tr : _)"
      if ! "$run" "$scenario" --out "$dir" --seed "$seed" --cq-writer "$w" >"$dir.log" 2>&1; then
        # A failing TLM run is a scenario's own verdict; the RTL runs must match it.
        [ "$w" = tlm ] || grep -q '^FAILED' "$dir.log" || { echo "$name seed $seed $w: $(tail -3 "$dir.log")"; failures=$((failures + 1)); }
      fi
    done
    runs=$((runs + 1))
    for w in rtl rtl_model; do
      for f in completions.jsonl trace.jsonl coverage.json; do
        cmp -s "$base-tlm/$f" "$base-$w/$f" || { echo "$name seed $seed: $w $f differs from tlm"; failures=$((failures + 1)); }
      done
      [ "$(strip "$base-tlm/report.json")" = "$(strip "$base-$w/report.json")" ] ||
        { echo "$name seed $seed: $w report.json differs from tlm"; failures=$((failures + 1)); }
      grep -q '"lockstep_requests"' "$base-$w/report.json" ||
        { echo "$name seed $seed: $w report has no cq_writer section"; failures=$((failures + 1)); }
    done
  done
done
echo "$runs scenario runs x 3 writers, $failures failure(s)"
[ "$failures" -eq 0 ]
