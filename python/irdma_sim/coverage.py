"""Functional coverage: a run's coverage.json, runs merged (a sweep's DIR/coverage.json),
and the lines that summarise it.

A coverage document holds groups; each group its axes, every bin with its hits (or, for a
bin no scenario can reach, the reason), and for observed groups `covered`, `reachable`,
`percent` and `holes` (the reachable bins never hit). The document's own `covered`,
`reachable` and `percent` add up the observed groups.
"""

import json
import math
from pathlib import Path


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def with_holes(doc):
    """Fills in each observed group's `covered`, `reachable`, `percent` and `holes` (the
    reachable bins never hit) and the document's totals, from its bins; returns `doc`."""
    covered = reachable = 0
    for group in doc["groups"]:
        if not group["observed"]:
            group.pop("covered", None), group.pop("reachable", None), group.pop("percent", None)
            group["holes"] = []
            continue
        bins = [b for b in group["bins"] if "hits" in b]
        group["covered"] = sum(b["hits"] > 0 for b in bins)
        group["reachable"] = len(bins)
        group["percent"] = _percent(group["covered"], group["reachable"])
        group["holes"] = [b["bin"] for b in bins if b["hits"] == 0]
        covered += group["covered"]
        reachable += group["reachable"]
    doc["covered"], doc["reachable"], doc["percent"] = covered, reachable, _percent(covered, reachable)
    return doc


def _percent(covered, reachable):
    # Halves round up, as coverage.json's writer rounds them (std::round).
    return math.floor(1000.0 * covered / reachable + 0.5) / 10 if reachable else 100.0


def merge(docs):
    """Several runs' coverage as one: hits summed bin by bin; a group is observed when any run
    observed it. Raises ValueError when the documents do not share one catalogue."""
    docs = list(docs)
    if not docs:
        raise ValueError("no coverage to merge")
    merged = json.loads(json.dumps(docs[0]))
    for doc in docs[1:]:
        if [(g["name"], len(g["bins"])) for g in doc["groups"]] != [(g["name"], len(g["bins"])) for g in merged["groups"]]:
            raise ValueError("coverage documents from different catalogues cannot be merged")
        for mine, theirs in zip(merged["groups"], doc["groups"]):
            mine["observed"] = mine["observed"] or theirs["observed"]
            for a, b in zip(mine["bins"], theirs["bins"]):
                if "hits" in a:
                    a["hits"] += b["hits"]
    return with_holes(merged)


def merge_runs(run_dirs, out_path):
    """Merges the coverage.json of every run directory that has one into `out_path` (written
    whole through a temporary file); returns the merged document, or None when no run had one."""
    docs = [load(p) for p in (Path(d) / "coverage.json" for d in run_dirs) if p.exists()]
    if not docs:
        return None
    merged = merge(docs)
    out_path = Path(out_path)
    tmp = out_path.with_name(out_path.name + ".tmp")
    tmp.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out_path)
    return merged


def summary_lines(doc, holes=8):
    """'coverage   96.8 % of 125 reachable bins' and a line per observed group, with its first holes."""
    doc = with_holes(json.loads(json.dumps(doc)))
    lines = [f"coverage   {doc['percent']} % of {doc['reachable']} reachable bins ({doc['covered']} hit)"]
    for g in doc["groups"]:
        if not g["observed"]:
            lines.append(f"  {g['name']:14s} not observed (the device ran in another process)")
            continue
        line = f"  {g['name']:14s} {g['percent']:5.1f} % ({g['covered']} of {g['reachable']})"
        if g["holes"] and holes:
            shown = ", ".join("/".join(h) for h in g["holes"][:holes])
            more = len(g["holes"]) - holes
            line += f"; holes: {shown}" + (f" and {more} more" if more > 0 else "")
        lines.append(line)
    return lines
