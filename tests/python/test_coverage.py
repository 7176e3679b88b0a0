"""Functional coverage as a user reads it: a run's coverage.json against what the run did,
a sweep's merge, the holes, and a device the run could not observe."""

import json
import math
import subprocess
import sys

import pytest

import irdma_sim
from irdma_sim import coverage


def cli(*args):
    return subprocess.run([sys.executable, "-m", "irdma_sim", *args], capture_output=True, text=True, timeout=600)


def group(doc, name):
    return next(g for g in doc["groups"] if g["name"] == name)


def hits(doc, name):
    return {tuple(b["bin"]): b["hits"] for b in group(doc, name)["bins"] if "hits" in b}


def test_a_runs_coverage_counts_what_its_completions_and_counters_say(scenario, tmp_path):
    report = irdma_sim.run(scenario("smoke.yaml"), tmp_path, trace=False)
    doc = json.loads((tmp_path / "coverage.json").read_text())
    counts = report["counts"]
    # Every delivered completion is one hit in sq_completion or rq_completion, and one in wc_status.
    delivered = sum(hits(doc, "sq_completion").values()) + sum(hits(doc, "rq_completion").values())
    assert delivered == counts["completions_delivered"] == sum(hits(doc, "wc_status").values())
    # smoke: SENDs only, every one a success on a GEN_2 device, with and without immediate data.
    assert hits(doc, "wc_status")[("success", "gen2")] == counts["completions_delivered"]
    assert set(k for k, v in hits(doc, "rq_completion").items() if v) == {("recv", "success"), ("recv_imm", "success")}
    assert sum(hits(doc, "cqe_write").values()) == counts["cqes_written"] + counts["ccq_cqes"]  # the CCQ's too
    assert sum(v for k, v in hits(doc, "cqe_write").items() if k[1] == "extended") == counts["extended_cqes"]
    # Its pool CQs' rings (602 slots) wrap several times, and the 32-byte extended CQEs split across it.
    assert hits(doc, "cq_ring")[("wrap",)] > 2 and hits(doc, "cqe_write")[("32B", "extended", "split_across_wrap")] > 0
    assert sum(hits(doc, "cqp_command").values()) == counts["cqp_commands"]
    assert sum(v for k, v in hits(doc, "ceq").items() if k == ("ceqe",)) == counts["ceqes"]
    assert hits(doc, "ceq")[("msix",)] == counts["msix_delivered"]  # sent, not merely raised
    # The totals and the unreachable bins.
    observed = [g for g in doc["groups"] if g["observed"]]
    assert len(observed) == len(doc["groups"])
    assert doc["reachable"] == sum(g["reachable"] for g in observed)
    assert doc["covered"] == sum(g["covered"] for g in observed)
    assert doc["percent"] == math.floor(1000 * doc["covered"] / doc["reachable"] + 0.5) / 10
    unreachable = [b for g in doc["groups"] for b in g["bins"] if "unreachable" in b]
    assert unreachable and all(len(b["unreachable"]) > 20 and "hits" not in b for b in unreachable)


def test_a_sweeps_coverage_is_its_runs_summed_with_the_holes_listed(scenario, tmp_path):
    out = tmp_path / "sw"
    proc = cli("sweep", scenario("smoke.yaml"), scenario("opcodes.yaml"), "--seeds", "1-2", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged = json.loads((out / "coverage.json").read_text())
    runs = [json.loads(p.read_text()) for p in out.glob("*/seed*/coverage.json")]
    assert len(runs) == 4
    for name in ("sq_completion", "cqe_write", "cqp_command"):
        expected = {}
        for doc in runs:
            for k, v in hits(doc, name).items():
                expected[k] = expected.get(k, 0) + v
        assert hits(merged, name) == expected
    for g in merged["groups"]:
        assert g["holes"] == [list(k) for k, v in hits(merged, g["name"]).items() if v == 0]
    assert f"coverage   {merged['percent']} % of {merged['reachable']} reachable bins" in proc.stdout
    assert "holes: " in proc.stdout


def test_runs_of_another_catalogue_are_not_merged(tmp_path):
    doc = {"groups": [{"name": "a", "observed": True, "bins": [{"bin": ["x"], "hits": 1}]}]}
    other = {"groups": [{"name": "b", "observed": True, "bins": [{"bin": ["x"], "hits": 1}]}]}
    merged = coverage.merge([doc, doc])
    assert merged["groups"][0]["bins"][0]["hits"] == 2 and merged["percent"] == 100.0
    with pytest.raises(ValueError, match="catalogues"):
        coverage.merge([doc, other])
    with pytest.raises(ValueError):
        coverage.merge([])


def test_a_device_in_another_process_leaves_its_groups_unobserved(scenario, tmp_path):
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path), "--no-trace", "--backend", "vfio-user")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "coverage.json").read_text())
    assert {g["name"] for g in doc["groups"] if not g["observed"]} == {
        "cqe_write", "cq_ring", "cq_resize", "cq_arm", "ceq", "cqp_command"}
    assert doc["reachable"] == sum(g["reachable"] for g in doc["groups"] if g["observed"])
    assert hits(doc, "wc_status")[("success", "gen2")] > 0
    assert "not observed (the device ran in another process)" in proc.stdout


def test_merging_runs_skips_runs_without_coverage_and_refuses_an_unreadable_file(tmp_path):
    run = {"groups": [{"name": "a", "observed": True, "bins": [{"bin": ["x"], "hits": 0}, {"bin": ["y"], "hits": 3}]}]}
    for name in ("r1", "r2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "coverage.json").write_text(json.dumps(run))
    (tmp_path / "could_not_run").mkdir()
    merged = coverage.merge_runs([tmp_path / "r1", tmp_path / "r2", tmp_path / "could_not_run"], tmp_path / "m.json")
    assert merged["groups"][0]["holes"] == [["x"]] and merged["percent"] == 50.0
    assert json.loads((tmp_path / "m.json").read_text()) == merged
    assert coverage.merge_runs([tmp_path / "could_not_run"], tmp_path / "none.json") is None
    (tmp_path / "r2" / "coverage.json").write_text("{cut short")
    with pytest.raises(ValueError):
        coverage.merge_runs([tmp_path / "r1", tmp_path / "r2"], tmp_path / "m.json")


def test_the_driver_paths_are_the_reports_own_counts(scenario, tmp_path):
    names = {"missed_event_repoll": "poller_missed_events", "retired_ring_polled": "retired_ring_completions",
             "flush_completion": "flushed_completions", "cq_error_handled": "cq_errors",
             "cqes_cleaned_at_destroy": "cqes_cleaned"}
    seen = set()
    for name in ("overflow.yaml", "flush_codes.yaml", "resize.yaml"):
        report = irdma_sim.run(scenario(name), tmp_path / name, trace=False)
        paths = hits(json.loads((tmp_path / name / "coverage.json").read_text()), "driver_path")
        for path, count in names.items():
            assert paths[(path,)] == report["counts"][count], (name, path)
            if paths[(path,)]:
                seen.add(path)
    assert seen == set(names), "each path is taken by one of these scenarios"
