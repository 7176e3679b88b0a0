"""The transaction log's two formats: a run writes trace.bin; `irdma-sim trace convert`
gives the trace.jsonl a run made with --trace-format jsonl writes, byte for byte; every
reader takes either; a harmed trace.bin is refused saying where."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import irdma_sim
from irdma_sim import trace


def cli(*args):
    return subprocess.run([sys.executable, "-m", "irdma_sim", *args], capture_output=True, text=True, timeout=600)


# Every field kind and fault event among them: purposes and causes (str), CQE bytes (hex),
# MSI-X faults and writes held back (events logged late into the reorder window).
@pytest.mark.parametrize("name,seed", [("smoke.yaml", 3), ("link_faults.yaml", 4), ("dma_faults.yaml", 6),
                                       ("function_reset.yaml", 4)])
def test_convert_writes_what_a_jsonl_run_writes_byte_for_byte(scenario, tmp_path, name, seed):
    binary, jsonl = tmp_path / "bin", tmp_path / "jsonl"
    a = irdma_sim.run(scenario(name), binary, seed=seed)
    b = irdma_sim.run(scenario(name), jsonl, seed=seed, trace_format="jsonl")
    assert a["counts"] == b["counts"]
    assert not (binary / "trace.jsonl").exists() and not (jsonl / "trace.bin").exists()
    proc = cli("trace", "convert", str(binary))
    assert proc.returncode == 0, proc.stderr
    expected = (jsonl / "trace.jsonl").read_bytes()
    assert (binary / "trace.jsonl").read_bytes() == expected
    events = expected.count(b"\n")
    assert proc.stdout.strip() == f"{binary / 'trace.jsonl'}: {events} events"
    assert (binary / "trace.bin").stat().st_size * 4 < len(expected), "the binary trace is the compact one"


def test_a_trace_cut_short_converts_every_whole_event_and_says_where(scenario, tmp_path):
    run = tmp_path / "run"
    assert irdma_sim.run(scenario("smoke.yaml"), run, seed=1)["passed"]
    cli("trace", "convert", str(run), "--out", str(tmp_path / "whole.jsonl"))
    whole = (tmp_path / "whole.jsonl").read_text().splitlines(keepends=True)
    data = (run / "trace.bin").read_bytes()
    (run / "trace.bin").write_bytes(data[:len(data) // 2 + 1])  # as a run killed mid-write leaves it
    proc = cli("trace", "convert", str(run))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "(was the run that wrote it killed?) at byte " in proc.stderr, proc.stderr
    got = (run / "trace.jsonl").read_text().splitlines(keepends=True)
    assert 0 < len(got) < len(whole) and got == whole[:len(got)]
    assert f"after {len(got)} events" in proc.stderr
    # Readers raise the same, having given what came before.
    with pytest.raises(ValueError, match="was the run that wrote it killed"):
        list(trace.lines(run / "trace.bin"))


def test_another_version_no_binary_trace_or_nowhere_to_write_is_refused(scenario, tmp_path):
    run = tmp_path / "run"
    assert irdma_sim.run(scenario("smoke.yaml"), run, seed=1)["passed"]
    data = bytearray((run / "trace.bin").read_bytes())
    data[8] = 7  # the format version, after the magic
    (run / "trace.bin").write_bytes(bytes(data))
    proc = cli("trace", "convert", str(run))
    assert proc.returncode == 2, proc.stderr
    assert "is a binary trace of format version 7; this irdma-sim reads version 1" in proc.stderr
    assert not (run / "trace.jsonl").exists()
    with pytest.raises(trace.TraceRefused):
        next(trace.lines(run / "trace.bin"))
    assert irdma_sim.run(scenario("smoke.yaml"), run, seed=1)["passed"]
    proc = cli("trace", "convert", str(run), "--out", str(tmp_path / "no" / "such" / "dir.jsonl"))
    assert proc.returncode == 2 and "cannot write" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    whole = (run / "trace.bin").read_bytes()
    proc = cli("trace", "convert", str(run), "--out", str(run / "trace.bin"))
    assert proc.returncode == 2 and "it is the trace being converted" in proc.stderr, proc.stderr
    assert (run / "trace.bin").read_bytes() == whole
    assert irdma_sim.run(scenario("smoke.yaml"), run, seed=1, trace=False)["passed"]
    proc = cli("trace", "convert", str(run))
    assert proc.returncode == 2 and "no trace.bin to convert" in proc.stderr, proc.stderr
    bad = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "x"), "--trace-format", "xml")
    assert bad.returncode == 2 and "invalid choice: 'xml'" in bad.stderr
    with pytest.raises(ValueError, match="trace_format"):
        irdma_sim.run(scenario("smoke.yaml"), tmp_path / "y", trace_format="xml")


def test_diff_and_the_report_read_either_format(scenario, tmp_path):
    for name, seed, fmt in (("a", 1, "bin"), ("b", 1, "jsonl"), ("c", 2, "jsonl")):
        assert irdma_sim.run(scenario("smoke.yaml"), tmp_path / name, seed=seed, trace_format=fmt)["passed"]
    same = cli("diff", str(tmp_path / "a"), str(tmp_path / "b"))
    assert same.returncode == 0 and "identical" in same.stdout, same.stdout + same.stderr
    other = cli("diff", str(tmp_path / "a"), str(tmp_path / "c"))
    assert other.returncode == 1 and "trace.bin (A), trace.jsonl (B): first difference" in other.stdout
    from irdma_sim.plots import RunData
    binary, text = RunData(tmp_path / "a"), RunData(tmp_path / "b")
    assert binary.traced and binary.cqe_written == text.cqe_written and binary.msix == text.msix
    assert sum(map(len, binary.cqe_written.values())) > 0


def test_irdma_sim_run_takes_the_format_with_a_run_only(scenario, tmp_path):
    runner = Path(os.environ["IRDMA_SIM_BIN"]).parent / "model" / "system" / "irdma-sim-run"
    bad = subprocess.run([str(runner), scenario("smoke.yaml"), "--out", str(tmp_path / "a"), "--trace-format", "xml"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--trace-format must be bin (trace.bin) or jsonl (trace.jsonl), got 'xml'" in bad.stderr
    replay = subprocess.run([str(runner), "--replay", str(tmp_path / "a"), "--trace-format", "jsonl"],
                            capture_output=True, text=True, timeout=60)
    assert replay.returncode == 2 and "--trace-format and --record go with a run, not --replay" in replay.stderr
    good = subprocess.run([str(runner), scenario("smoke.yaml"), "--out", str(tmp_path / "b"), "--trace-format", "jsonl"],
                          capture_output=True, text=True, timeout=120)
    assert good.returncode == 0, good.stderr
    assert (tmp_path / "b" / "trace.jsonl").exists() and not (tmp_path / "b" / "trace.bin").exists()
