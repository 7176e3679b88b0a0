#!/bin/sh
# Runs every shipped scenario for seeds 1-3 and writes one checksum per output, so that two
# builds can be compared for bit-identical behaviour (report.json without wall_time_s and
# with the scenario's directory left out, completions.jsonl, trace.jsonl, coverage.json):
#   tests/scripts/scenario_outputs.sh build/model/system/irdma-sim-run /tmp/before
#   ... change, rebuild ...
#   tests/scripts/scenario_outputs.sh build/model/system/irdma-sim-run /tmp/after
#   diff /tmp/before/SHA256SUMS /tmp/after/SHA256SUMS
# With SYNC=loose, every scenario runs in the loosely timed mode instead (its copy, with
# `sync: {mode: loose}` under its `config:`, is kept in OUT/scenarios). SEEDS (default
# "1 2 3") chooses the seeds, RUN_ARGS adds arguments to every run (e.g. --cq-writer rtl);
# the report's RTL section (cq_writer) is left out of its checksum, as its wall time is;
# EXCLUDE (names, e.g. "cqe_halves") leaves scenarios out. Traces are written and summed as
# trace.jsonl, so a build from before trace.bin compares with one after.
set -eu
run=$1 out=$2
trace_format=
if "$run" --help 2>&1 | grep -q -- --trace-format; then trace_format="--trace-format jsonl"; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
: >"$out/SHA256SUMS"
scenarios="$root/scenarios"
if [ "${SYNC:-approximate}" != approximate ]; then
  scenarios="$out/scenarios"
  mkdir -p "$scenarios"
  for scenario in "$root"/scenarios/*.yaml; do
    sed "s/^config:\$/config:\n  sync: {mode: $SYNC}/" "$scenario" >"$scenarios/$(basename "$scenario")"
    grep -q "sync: {mode: $SYNC}" "$scenarios/$(basename "$scenario")" || { echo "no config: in $scenario" >&2; exit 2; }
  done
fi
for scenario in "$scenarios"/*.yaml; do
  case " ${EXCLUDE:-} " in *" $(basename "$scenario" .yaml) "*) continue ;; esac
  for seed in ${SEEDS:-1 2 3}; do
    dir="$out/$(basename "$scenario" .yaml)-seed$seed"
    # shellcheck disable=SC2086 # RUN_ARGS is a list of words
    "$run" "$scenario" --out "$dir" --seed "$seed" $trace_format ${RUN_ARGS:-} >"$dir.log" 2>&1 || true  # failing runs are compared too
    [ -f "$dir/report.json" ] || { echo "$dir: the run left no report.json (see $dir.log)" >&2; exit 2; }
    sed -e 's/"wall_time_s":[^,]*,//' -e 's/,"cq_writer":{.*}}$/}/' -e "s|$scenarios/|scenarios/|g" \
      "$dir/report.json" >"$dir/report.nowall.json"
    (cd "$out" && sha256sum "${dir##*/}/report.nowall.json" "${dir##*/}/completions.jsonl" \
       "${dir##*/}/trace.jsonl" "${dir##*/}/coverage.json" >>SHA256SUMS)
  done
done
wc -l <"$out/SHA256SUMS"
