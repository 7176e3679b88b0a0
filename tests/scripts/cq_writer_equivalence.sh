#!/bin/sh
# The RTL CQ writer in the loop against the TLM one, on every shipped scenario and seed:
#   tests/scripts/cq_writer_equivalence.sh build/model/system/irdma-sim-run OUT [SEEDS]
# (SEEDS: "1 2 3 ...", 1-10 when absent). scenario_outputs.sh runs them three ways: tlm, the
# reference; rtl (the RTL's bytes, its cycles the engine's clock); rtl:model (the RTL's
# bytes, the stage costs the clock). The stage costs being the RTL's cycles charged where it
# spends them, both RTL runs must leave the TLM runs' outputs byte for byte (completions,
# the trace with every DMA at its picosecond, coverage, and the report but for its wall time
# and RTL section), and every RTL run's lock-step scoreboard must have compared requests.
# A run the lock-step scoreboard or an RTL assertion stopped leaves no report: a failure.
set -eu
run=$1 out=$2
seeds=${3:-"1 2 3 4 5 6 7 8 9 10"}
here=$(cd "$(dirname "$0")" && pwd)
# cqe_halves.yaml's device writes main halves first, which the RTL writer does not (it
# refuses the setting).
for w in tlm rtl rtl:model; do
  EXCLUDE=cqe_halves SEEDS=$seeds RUN_ARGS="--cq-writer $w" "$here/scenario_outputs.sh" "$run" "$out/$(echo "$w" | tr : _)" >/dev/null
done
failures=0
for w in rtl rtl_model; do
  diff "$out/tlm/SHA256SUMS" "$out/$w/SHA256SUMS" >&2 || { echo "$w: outputs differ from tlm" >&2; failures=$((failures + 1)); }
  for report in "$out/$w"/*-seed*/report.json; do
    /usr/bin/python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["cq_writer"]["lockstep_requests"] <= 0)' \
      "$report" || { echo "$report: no lock-step comparison" >&2; failures=$((failures + 1)); }
  done
done
echo "$(wc -l <"$out/tlm/SHA256SUMS") outputs x 3 writers compared, $failures failure(s)"
[ "$failures" -eq 0 ]
