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


def test_each_pair_spans_two_cqs_of_two_vectors(scenario, tmp_path):
    report = irdma_sim.run(scenario("cross_vectors.yaml"), tmp_path, trace=False)
    assert report["passed"]
    cq_of = {}
    for line in (tmp_path / "completions.jsonl").read_text().splitlines():
        wc = json.loads(line)
        assert cq_of.setdefault(wc["qp_num"], wc["cq"]) == wc["cq"], "a QP's completions on two CQs"
    qps = sorted(cq_of)
    assert len(qps) == 8 and len(set(cq_of.values())) == 2
    # A pair is two consecutive QP numbers, its QPs on different CQs (the pool's two, one
    # per vector).
    for a, b in zip(qps[0::2], qps[1::2]):
        assert cq_of[a] != cq_of[b], (a, b, cq_of)


@pytest.mark.parametrize("name", ["cross_vectors", "cross_vectors_gen3"])
def test_served_two_at_a_time_over_seeds(name, scenario, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "irdma_sim", "sweep", scenario(f"{name}.yaml"), "--seeds", "1-8",
                           "--jobs", "2", "--backend", "vfio-user", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["passed"] == 8, summary
