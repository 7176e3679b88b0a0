"""A run's transaction log in either format: trace.bin (the default) or trace.jsonl (a run
made with --trace-format jsonl, one from before trace.bin, or `irdma-sim trace convert`'s
output). Whichever a run has, readers get trace.jsonl's lines: a binary trace is decoded
by the simulator's own reader, so the two cannot disagree."""

import json
from pathlib import Path

from irdma_sim._irdma_sim import TraceLines, TraceRefused, convert_trace

BINARY_MAGIC = b"IRDMATRC"
# A run's own trace first: a trace.jsonl beside it was converted from it.
NAMES = ("trace.bin", "trace.jsonl")


def trace_file(run_dir):
    """The run's trace file, or None when it wrote none."""
    for name in NAMES:
        path = Path(run_dir) / name
        if path.exists():
            return path
    return None


def is_binary(path):
    with open(path, "rb") as f:
        return f.read(len(BINARY_MAGIC)) == BINARY_MAGIC


def lines(path):
    """Yields the trace's lines as trace.jsonl holds them (without their newlines), whatever
    the file's format (known by its first bytes, not its name). A binary trace of another
    format version raises TraceRefused (a ValueError); one that is malformed or cut short,
    ValueError saying where, after every event before the fault."""
    if is_binary(path):
        try:
            yield from TraceLines(str(path))
        except RuntimeError as e:  # TraceRefused is a ValueError already
            raise ValueError(str(e)) from None
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")


def events(path):
    """Yields the trace's events as dicts; ValueError names the file and line of one that
    is not JSON (a trace.jsonl cut short)."""
    for index, line in enumerate(lines(path)):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except ValueError:
            raise ValueError(f"{path}:{index + 1}: not a JSON object (the file is cut short or corrupt)") from None


def convert(run_dir, out=None):
    """Writes the trace.jsonl that RUN_DIR's trace.bin stands for (to `out` if given);
    returns (the path written, the events in it). FileNotFoundError when the run has no
    trace.bin; TraceRefused before writing, or ValueError after every event before the
    fault, as `lines` raises them; an OSError (TraceWriteFailed) when `out` cannot be
    written."""
    source = Path(run_dir) / "trace.bin"
    if not source.exists():
        other = " (it has a trace.jsonl already)" if (Path(run_dir) / "trace.jsonl").exists() else ""
        raise FileNotFoundError(f"{run_dir}: no trace.bin to convert{other}")
    target = Path(out) if out else Path(run_dir) / "trace.jsonl"
    try:
        return target, convert_trace(str(source), str(target))
    except RuntimeError as e:  # TraceRefused is a ValueError already
        raise ValueError(str(e)) from None
