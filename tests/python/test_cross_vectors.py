"""Pairs whose two QPs sit on CQs of different vectors (cross_vectors*.yaml): each message's
send completes on one poll context and its receive on another. Over the served device, the
driver and workload on OS threads, two runs at a time as a sweep runs them, this once lost,
reordered and misattributed completions and crashed at teardown; CI runs it over several
seeds every time."""

import json
import subprocess
import sys

import pytest

import irdma_sim
from irdma_sim.trace import lines as trace_lines


@pytest.mark.parametrize("name", ["cross_vectors", "cross_vectors_gen3"])
def test_each_pair_spans_two_vectors(name, scenario, tmp_path):
    report = irdma_sim.run(scenario(f"{name}.yaml"), tmp_path)
    assert report["passed"]
    cq_of = {}
    for line in (tmp_path / "completions.jsonl").read_text().splitlines():
        wc = json.loads(line)
        assert cq_of.setdefault(wc["qp_num"], wc["cq"]) == wc["cq"], "a QP's completions on two CQs"
    # The vector each CQ's events came on: a CEQE names its CQ in its context's low bits.
    ceq_of = {}
    for line in trace_lines(tmp_path / "trace.bin"):
        if '"ev":"ceqe"' in line:
            ev = json.loads(line)
            ceq_of.setdefault(int(ev["ctx"], 16) & 0xFFFFFFFF, set()).add(ev["ceq"])
    qps = sorted(cq_of)
    assert len(qps) == 10 and len({cq_of[q] for q in qps[:8]}) == 2 and len(set(cq_of.values())) == 4
    # A pair is two consecutive QP numbers: the pool's four pairs, then the one whose CQs
    # are its own. Each CQ's events come on one vector, and a pair's two on two.
    for a, b in zip(qps[0::2], qps[1::2]):
        va, vb = ceq_of[cq_of[a]], ceq_of[cq_of[b]]
        assert len(va) == 1 and len(vb) == 1 and va != vb, (a, b, cq_of, ceq_of)


@pytest.mark.parametrize("name", ["cross_vectors", "cross_vectors_gen3"])
def test_served_two_at_a_time_over_seeds(name, scenario, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "irdma_sim", "sweep", scenario(f"{name}.yaml"), "--seeds", "1-8",
                           "--jobs", "2", "--backend", "vfio-user", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["passed"] == 8, summary
