"""Replay, as a validation engineer uses it: record a golden run, re-drive its host side
into the device alone, and find a changed device's first different write."""

import json
import subprocess
import sys

import pytest

import irdma_sim
from irdma_sim.runner import ReplayFailed, replay


def cli(*args):
    return subprocess.run([sys.executable, "-m", "irdma_sim", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """events.yaml (interrupts on several vectors, arms, bursts) recorded once."""
    import os
    out = tmp_path_factory.mktemp("golden")
    report = irdma_sim.run(os.path.join(os.environ["IRDMA_SIM_SOURCE_DIR"], "scenarios", "events.yaml"), out,
                           trace=False, record=True)
    assert report["passed"]
    return out


def test_a_recorded_run_replays_identically_with_either_formatter(golden):
    for formatter in (None, "tlm", "rtl"):
        r = replay(golden, formatter)
        assert r["identical"] and r["difference"] == "", r
        assert r["writes"] > 10000 and r["reads"] > 10000 and r["msix"] > 1000 and r["mmio"] > 1000


def test_a_one_bit_change_in_the_formatter_is_found_at_the_first_cqe(golden):
    proc = cli("replay", str(golden), "--flip-cqe-bit", "200")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = proc.stdout
    assert line.startswith(f"DIFFERS    {golden}: device access ")
    # The first CQE the device writes is the CCQ's (a control command's completion): byte 25
    # of its main half holds bit 200.
    assert "recorded a DMA write of 32 bytes" in line and "first differing byte 25 (bit 200 of the write flipped)" in line
    stimulus = (golden / "stimulus.jsonl").read_text().splitlines()
    recorded_line = int(line.split("(line ")[1].split(")")[0])
    ev = json.loads(stimulus[recorded_line - 1])
    assert ev["ev"] == "dma_write" and ev["len"] == 32
    # The bit of qword 3 (bit 192 on) that flipped is in the valid qword: a changed device, caught.
    r = replay(golden, "rtl", 0)
    assert not r["identical"] and "first differing byte 0 (bit 0 of the write flipped)" in r["difference"]
    # The bit is named by its number, as --flip-cqe-bit takes it, not as a byte's mask.
    r = replay(golden, "tlm", 1)
    assert not r["identical"] and "first differing byte 0 (bit 1 of the write flipped)" in r["difference"]


def test_an_empty_recording_is_refused_not_passed(golden, tmp_path):
    (tmp_path / "scenario.yaml").write_bytes((golden / "scenario.yaml").read_bytes())
    (tmp_path / "stimulus.jsonl").write_text("")
    proc = cli("replay", str(tmp_path))
    assert proc.returncode == 2 and "stimulus.jsonl is empty: the run recorded nothing" in proc.stderr, proc.stderr


def test_the_verdict_is_found_after_what_systemc_prints(monkeypatch, tmp_path):
    import irdma_sim.runner as runner
    verdict = {"identical": True, "difference": "", "mmio": 1, "reads": 0, "writes": 0, "msix": 0, "cut_at_line": 3}
    printed = "\nWarning: (W545) sc_stop has already been called\n" + json.dumps(verdict) + "\n"
    monkeypatch.setattr(runner.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=printed, stderr=""))
    assert replay(tmp_path) == verdict
    monkeypatch.setattr(runner.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout="Warning: (W545)\n", stderr=""))
    with pytest.raises(ReplayFailed, match="printed no verdict"):
        replay(tmp_path)


def test_a_recording_missing_a_write_malformed_or_cut_short_is_named(golden, tmp_path):
    lines = (golden / "stimulus.jsonl").read_text().splitlines(keepends=True)
    writes = [i for i, l in enumerate(lines) if l.startswith('{"ev":"dma_write"')]
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / "scenario.yaml").write_bytes((golden / "scenario.yaml").read_bytes())
    dropped = writes[100]
    (edited / "stimulus.jsonl").write_text("".join(lines[:dropped] + lines[dropped + 1:]))
    r = replay(edited)
    assert not r["identical"] and r["writes"] == 100, r
    assert f"(line {dropped + 1})" in r["difference"], "the recording's next write, where the dropped one was"
    # A malformed line is an error naming it.
    (edited / "stimulus.jsonl").write_text("".join(lines[:dropped]) + lines[dropped][:40] + "\n" + lines[dropped + 1])
    with pytest.raises(ReplayFailed, match=f"line {dropped + 1}: "):
        replay(edited)
    # A run killed as it wrote: compared up to the unfinished line, nothing past it held against the device.
    (edited / "stimulus.jsonl").write_text("".join(lines[:dropped]) + lines[dropped][:40])
    r = replay(edited)
    assert r["identical"] and r["cut_at_line"] == dropped + 1 and r["writes"] == 100, r
    proc = cli("replay", str(edited))
    assert proc.returncode == 0 and f"the recording was cut short at line {dropped + 1}" in proc.stdout
    # One that ends between two lines cannot be told from a device that wrote too much.
    (edited / "stimulus.jsonl").write_text("".join(lines[:dropped]))
    r = replay(edited)
    assert not r["identical"] and "past the recording's end" in r["difference"] and r["cut_at_line"] == 0


def test_what_cannot_be_recorded_or_replayed_is_said(scenario, tmp_path):
    proc = cli("replay", str(tmp_path))
    assert proc.returncode == 2 and "replay needs a run made with --record" in proc.stderr
    loose = tmp_path / "loose.yaml"
    loose.write_text(open(scenario("smoke.yaml")).read().replace("config:\n", "config:\n  sync: {mode: loose}\n", 1))
    proc = cli("run", str(loose), "--out", str(tmp_path / "l"), "--record")
    assert proc.returncode == 2 and "--record needs sync.mode approximate" in proc.stderr
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "v"), "--record", "--backend", "vfio-user")
    assert proc.returncode == 2 and "--record needs the sim backend" in proc.stderr
    assert not (tmp_path / "v" / "scenario.yaml").exists(), "a refused recording leaves nothing of itself"
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "c"), "--record", "--cq-writer", "rtl")
    assert proc.returncode == 2 and "--record keeps the scenario as it is" in proc.stderr
    # A later run into the same directory without --record leaves no stale recording.
    out = tmp_path / "again"
    assert cli("run", scenario("smoke.yaml"), "--out", str(out), "--record", "--no-trace").returncode == 0
    assert cli("run", scenario("smoke.yaml"), "--out", str(out), "--no-trace").returncode == 0
    assert not (out / "stimulus.jsonl").exists() and not (out / "scenario.yaml").exists()


def test_a_recording_from_before_answers_were_recorded_still_replays(golden, tmp_path):
    # Recordings before 2026-12-02 carried no "ok" (nor a read's value) on host accesses.
    old = tmp_path / "old"
    old.mkdir()
    (old / "scenario.yaml").write_bytes((golden / "scenario.yaml").read_bytes())
    lines = []
    for line in (golden / "stimulus.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev["ev"] == "mmio":
            ev.pop("ok")
            if ev["cmd"] == "read":
                ev.pop("data", None)
        lines.append(json.dumps(ev, separators=(",", ":")))
    (old / "stimulus.jsonl").write_text("\n".join(lines) + "\n")
    r = replay(old)
    assert r["identical"] and r["mmio"] > 100, r["difference"]
    proc = cli("replay", str(golden), "--formatter", "tlm", "--cq-writer", "rtl")
    assert proc.returncode == 2 and "--formatter chooses the TLM writer's formatter" in proc.stderr


def test_a_register_that_reads_otherwise_is_a_difference(golden, tmp_path):
    lines = (golden / "stimulus.jsonl").read_text().splitlines(keepends=True)
    first_read = next(i for i, l in enumerate(lines) if '"cmd":"read"' in l and '"ok":true' in l)
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / "scenario.yaml").write_bytes((golden / "scenario.yaml").read_bytes())
    recorded = json.loads(lines[first_read])
    wrong = dict(recorded, data="ff" * recorded["len"])
    lines[first_read] = json.dumps(wrong, separators=(",", ":")) + "\n"
    (edited / "stimulus.jsonl").write_text("".join(lines))
    r = replay(edited)
    assert not r["identical"]
    assert r["difference"].startswith(f"host access {first_read + 1} at 0 ps: recorded an MMIO read"), r["difference"]
    assert f"(line {first_read + 1}), replayed an MMIO read" in r["difference"]
