"""Where two runs' outputs part: the first completion, the first trace event and the
counts that differ. Runs are deterministic, so any difference is a change in behaviour
(of the driver, the model or the scenario), and the first one is where to look."""

import json
from collections import deque
from itertools import zip_longest
from pathlib import Path

from irdma_sim import trace

# report.json entries that differ between identical runs.
VOLATILE = {"wall_time_s", "file"}


def first_difference(path_a, path_b, context=3):
    """The first differing line of two JSON-lines files (or binary traces, read as the
    lines they stand for): (index, a, b, previous lines) with a or b None past the end of
    one file; None when the files are equal. Raises ValueError naming the file and line of
    a line that is not JSON (a run cut short)."""
    previous = deque(maxlen=context)  # raw lines: only the ones shown are parsed
    for index, (a, b) in enumerate(zip_longest(trace.lines(path_a), trace.lines(path_b))):
        if a != b:
            return (index, parsed(a, path_a, index), parsed(b, path_b, index),
                    [parsed(p, path_a, index - len(previous) + i) for i, p in enumerate(previous)])
        previous.append(a)
    return None


def parsed(line, path, index):
    if line is None:
        return None
    try:
        return json.loads(line)
    except ValueError:
        raise ValueError(f"{path}:{index + 1}: not a JSON object (the file is cut short or corrupt)") from None


def read_report(run_dir):
    path = Path(run_dir) / "report.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise ValueError(f"{path}: not valid JSON (the run was cut short, or the file is corrupt)") from None


def fields_that_differ(a, b):
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def count_differences(report_a, report_b):
    counts_a, counts_b = report_a["counts"], report_b["counts"]
    diffs = [f"counts.{k}: {counts_a.get(k)} -> {counts_b.get(k)}"
             for k in sorted(set(counts_a) | set(counts_b)) if counts_a.get(k) != counts_b.get(k)]
    diffs += [f"{k}: {report_a.get(k)} -> {report_b.get(k)}"
              for k in sorted(set(report_a) | set(report_b))
              if k not in VOLATILE | {"counts", "checks"} and report_a.get(k) != report_b.get(k)]
    checks_a = {c["name"]: c["passed"] for c in report_a["checks"]}
    checks_b = {c["name"]: c["passed"] for c in report_b["checks"]}
    diffs += [f"check {k}: {'passed' if checks_a.get(k) else 'failed'} -> "
              f"{'passed' if checks_b.get(k) else 'failed'}"
              for k in sorted(set(checks_a) | set(checks_b)) if checks_a.get(k) != checks_b.get(k)]
    return diffs


def describe(name, found):
    index, a, b, previous = found
    lines = [f"{name}: first difference at line {index + 1}"]
    lines += [f"    {json.dumps(p)}" for p in previous]
    if a is None or b is None:
        lines.append(f"  only in {'B' if a is None else 'A'}: {json.dumps(b if a is None else a)}")
    else:
        lines.append(f"  A: {json.dumps(a)}")
        lines.append(f"  B: {json.dumps(b)}")
        lines.append(f"  fields: {', '.join(fields_that_differ(a, b))}")
    return lines


def _output(run_dir, name):
    path = trace.trace_file(run_dir) if name == "trace" else run_dir / name
    return path if path and path.exists() else None


def diff_runs(dir_a, dir_b):
    """Returns the lines of a report on where two output directories differ (empty when
    they do not); raises FileNotFoundError when either lacks report.json, ValueError (naming
    the file and line) when an output is not valid JSON or a binary trace is malformed."""
    dir_a, dir_b = Path(dir_a), Path(dir_b)
    report_a, report_b = read_report(dir_a), read_report(dir_b)
    lines = [f"  {d}" for d in count_differences(report_a, report_b)]
    if lines:
        lines.insert(0, "report.json:")
    for name in ("completions.jsonl", "trace"):
        a, b = _output(dir_a, name), _output(dir_b, name)
        if a and b:  # one run's trace.bin and another's trace.jsonl compare event by event
            found = first_difference(a, b)
            if found:
                lines += describe(a.name if a.name == b.name else f"{a.name} (A), {b.name} (B)", found)
        elif a or b:
            lines.append(f"{(a or b).name}: only in {'A' if a else 'B'}")
    return lines
