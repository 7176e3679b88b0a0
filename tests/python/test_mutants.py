"""Mutants of the shipped scenarios, run end to end: a value replaced by something hostile
(sizes at and past their limits, wrong types), a line dropped or repeated. Each run must end
in a report, passed or failed with every failure explained, or in a scenario error that
names the file; never in a crash, a hang or silence."""

import random
import re

import pytest

import irdma_sim
from conftest import SOURCE
from irdma_sim.runner import RunFailed

HOSTILE = ["-1", "0", "1", "2", "3", "7", "4095", "4096", "4097", "65535", "abc", "1.5", "~", "[]", "{}",
           "4294967296", "18446744073709551616", "true"]
SCENARIOS = ["smoke", "rdma_ops", "gen3", "ud", "opcodes", "opcodes_gen3", "errors_flush", "events",
             "resize", "overflow", "teardown"]


def value_lines(lines):
    """Indices of the lines that set something (not comments, blanks or the description)."""
    in_text = False
    for i, line in enumerate(lines):
        if line.startswith("description:"):
            in_text = True
            continue
        if in_text and line.startswith(" "):
            continue
        in_text = False
        if line.strip() and not line.lstrip().startswith("#"):
            yield i


def mutants(source_dir, per_scenario=6, seed=11):
    rng = random.Random(seed)
    for name in SCENARIOS:
        lines = (source_dir / "scenarios" / f"{name}.yaml").read_text().split("\n")
        targets = list(value_lines(lines))
        made = 0
        while made < per_scenario:
            mutant = list(lines)
            at = rng.choice(targets)
            kind = rng.randrange(4)
            if kind == 0:
                del mutant[at]
            elif kind == 1:
                mutant.insert(at, mutant[at])
            else:
                colon = mutant[at].find(": ")
                if colon < 0:
                    continue
                mutant[at] = mutant[at][:colon + 2] + rng.choice(HOSTILE)
            made += 1
            yield f"{name}_{made}", "\n".join(mutant)


@pytest.mark.parametrize("label,text", list(mutants(SOURCE)))
def test_mutant_ends_in_a_report_or_a_named_error(label, text, tmp_path):
    path = tmp_path / f"{label}.yaml"
    path.write_text(text)
    try:
        report = irdma_sim.run(str(path), tmp_path / "out", trace=False, timeout=120)
    except RunFailed as e:
        assert e.returncode == 2, f"exit status {e.returncode}: {e.stderr}"
        assert re.search(re.escape(str(path)) + r":\d+:\d+: ", e.stderr), e.stderr
        return
    for check in report["checks"]:
        assert check["passed"] or check["detail"], f"{check['name']} failed without saying why"


def test_a_scenario_the_device_cannot_hold_fails_saying_why(source_dir, tmp_path):
    """A scenario error naming the key and its limit, before anything runs."""
    text = (source_dir / "scenarios" / "smoke.yaml").read_text().replace("max_cqe: 300", "max_cqe: 8")
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    with pytest.raises(irdma_sim.RunFailed, match="config.device.max_cqe = 8 caps a CQ") as e:
        irdma_sim.run(str(path), tmp_path / "out", trace=False)
    assert e.value.returncode == 2

    text = (source_dir / "scenarios" / "smoke.yaml").read_text().replace("max_bytes: 2048", "max_bytes: 1048576")
    path.write_text(text.replace("    cpus: 2\n", "    cpus: 2\n    memory_mb: 16\n", 1))
    with pytest.raises(irdma_sim.RunFailed, match="memory_mb = 16") as e:
        irdma_sim.run(str(path), tmp_path / "out2", trace=False)
    assert e.value.returncode == 2
