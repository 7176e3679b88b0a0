#!/bin/sh
# Runs a scenario's driver and workload in this build against the device model served by
# another build's irdma-sim-serve (one without ThreadSanitizer: SystemC's coroutines and
# TSan do not mix), and fails with the run or the server:
#   run_against_server.sh SERVE RUN SCENARIO OUT
set -u
serve=$1 run=$2 scenario=$3 out=$4
socket="${TMPDIR:-/tmp}/irdma-sim-tsan-$$.sock"
"$serve" --socket "$socket" --config "$scenario" --once &
server=$!
trap 'kill $server 2>/dev/null' EXIT
"$run" "$scenario" --out "$out" --no-trace --backend "vfio-user:$socket"
status=$?
# A server the run never reached (it failed first) would wait for a client for good.
for _ in $(seq 50); do kill -0 $server 2>/dev/null || break; sleep 0.2; done
if kill -0 $server 2>/dev/null; then
  kill $server
  echo "run_against_server.sh: the server was still waiting 10 s after the run (status $status) ended" >&2
  [ "$status" -ne 0 ] || status=3
fi
wait $server || { [ "$status" -ne 0 ] || { echo "run_against_server.sh: the server failed" >&2; status=3; }; }
trap - EXIT
exit $status
