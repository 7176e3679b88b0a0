"""Every example in every README runs as written.

The test finds each README.md in the source tree (not in build*/, out/, hidden folders or
tests/fuzz/corpus/) and checks each fenced code block by its info string:

  ```sh            run with `bash -e -o pipefail`; it must exit 0.
  ```sh norun      not run (root, hardware, sudo, a cluster, make, or minutes); every line
                   that starts with `irdma-sim ` must parse with the CLI's own argument
                   parser (irdma_sim.cli.build_parser), `$NAME` expanded from the block's
                   own `NAME=value` lines.
  ```python        run with this test's Python (sys.executable), PYTHONPATH as given.
  ```python norun  compiled, not run.
  ```yaml          a scenario (a `qp_pairs` key) must pass `irdma-sim check`; a fragment
                   (a config section's keys alone: device/link/host/driver/sync, or some
                   of a scenario's top-level keys) is checked inside a minimal scenario;
                   anything else must parse with PyYAML.
  ```text          output shown; not run.

Any other info string, or none, fails: every block says how it is checked.

Where blocks run. README examples are written to be pasted at the repository root
(`irdma-sim run scenarios/smoke.yaml`, `PYTHONPATH=build/python ...`, outputs under out/).
Running them in the source tree itself would litter it (and race with a build or another
run of this test), so each block runs in a fresh temporary directory laid out as the
repository root: every top-level entry of the source tree is a symlink there (scenarios/,
tests/, python/, ...), `build` is a symlink to the build under test ($IRDMA_SIM_BIN/..),
and `out/` and anything else a block writes is the directory's own. The directory is
removed afterwards (symlinks are unlinked, never followed), and the block's process group
is killed so that nothing it started in the background outlives it. The environment: PATH
starts with $IRDMA_SIM_BIN, PYTHONPATH is the test's, REPO names the source tree.

Blocks write under out/ (or the directory itself), never into the symlinked folders, which
are the source tree's.

Besides the blocks: the top README stays under 250 lines, every relative link in a README
names a file (and a heading, after #) that exists, and no README carries a date (figures
are `make bench`'s to print).

Run by CTest as pytest.test_readme, or by hand from the repository root:
  IRDMA_SIM_BIN=$PWD/build/bin PYTHONPATH=$PWD/build/python SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 \\
    /usr/bin/python3 -m pytest -q tests/python/test_readme.py
"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from conftest import SOURCE

BIN = Path(os.environ.get("IRDMA_SIM_BIN", SOURCE / "build" / "bin")).resolve()
BUILD = BIN.parent
BLOCK_TIMEOUT = 60  # seconds; blocks are meant to take a few
KNOWN = {"sh", "sh norun", "python", "python norun", "yaml", "text"}
CONFIG_SECTIONS = {"device", "link", "host", "driver", "sync"}
SCENARIO_KEYS = {"name", "description", "seed", "config", "pool", "qp_pairs", "traffic", "faults"}


def readmes():
    found = []
    for root, dirs, files in os.walk(SOURCE):
        rel = Path(root).relative_to(SOURCE)
        keep = []
        for d in sorted(dirs):
            if d.startswith(".") or d == "__pycache__":
                continue
            if rel == Path(".") and (d.startswith("build") or d == "out"):
                continue
            if rel / d == Path("tests/fuzz/corpus"):
                continue
            keep.append(d)
        dirs[:] = keep
        if "README.md" in files:
            found.append(Path(root) / "README.md")
    return sorted(found)


FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


def blocks(path):
    """(line of the opening fence, info string, body) for each fenced block of a README."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        start, body = i + 1, []
        i += 1
        while i < len(lines):
            c = FENCE.match(lines[i])
            if c and c.group(2)[0] == fence[0] and len(c.group(2)) >= len(fence) and not c.group(3).strip():
                break
            line = lines[i]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))):])
            i += 1
        else:
            raise AssertionError(f"{path}:{start}: a code block is never closed")
        out.append((start, " ".join(info.split()), "\n".join(body) + "\n"))
        i += 1
    return out


CASES = [(p, line, info, body) for p in readmes() for line, info, body in blocks(p)]


def case_id(case):
    if not isinstance(case, tuple):  # no code block anywhere: pytest's placeholder
        return "none"
    path, line, info, _ = case
    return f"{path.relative_to(SOURCE)}:{line}:{info.replace(' ', '-') or 'none'}"


def where(path, line):
    return f"{path.relative_to(SOURCE)}:{line}"


class RepoRoot:
    """A temporary directory laid out as the repository root, with a fresh out/."""

    def __enter__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="readme-"))
        for entry in SOURCE.iterdir():
            name = entry.name
            if name in (".git", "out") or name.startswith("build") or name.startswith(".pytest"):
                continue
            (self.dir / name).symlink_to(entry)
        (self.dir / "build").symlink_to(BUILD)
        return self.dir

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)


def environment():
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["REPO"] = str(SOURCE)
    env["SYSTEMC_DISABLE_COPYRIGHT_MESSAGE"] = "1"
    return env


def run_in_root(cmd, script_name, text, path, line):
    with RepoRoot() as root:
        script = root / script_name
        script.write_text(text, encoding="utf-8")
        proc = subprocess.Popen([*cmd, str(script)], cwd=root, env=environment(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            pytest.fail(f"{where(path, line)}: the block took over {BLOCK_TIMEOUT} s\n"
                        f"--- block\n{text}--- stdout\n{stdout}--- stderr\n{stderr}")
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever the block left in the background
            except ProcessLookupError:
                pass
        assert proc.returncode == 0, (f"{where(path, line)}: the block exited {proc.returncode}\n"
                                      f"--- block\n{text}--- stdout\n{stdout}--- stderr\n{stderr}")


def joined_lines(body):
    """The block's lines with backslash continuations joined."""
    out, acc = [], ""
    for line in body.split("\n"):
        if line.endswith("\\"):
            acc += line[:-1] + " "
            continue
        out.append(acc + line)
        acc = ""
    return out


def cli_words(line, variables):
    """The arguments of an `irdma-sim ...` command line, up to a shell operator or comment."""
    for name, value in variables.items():
        line = line.replace("${" + name + "}", value).replace("$" + name, value)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = []
    for word in lexer:
        if word and set(word) <= set("&|;<>()"):
            break
        words.append(word)
    return words[1:]


def check_cli_lines(body, path, line):
    from irdma_sim.cli import build_parser

    variables = {}
    for number, text in enumerate(joined_lines(body)):
        stripped = text.strip()
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S+)", stripped)
        if m:
            variables[m.group(1)] = m.group(2)
        if not stripped.startswith("irdma-sim "):
            continue
        args = cli_words(stripped, variables)
        try:
            build_parser().parse_args(args)
        except SystemExit as e:
            assert e.code == 0, f"{where(path, line + 1 + number)}: `{stripped}` does not parse (exit {e.code})"


def scenario_from(doc):
    """A scenario to check for a YAML block, or None when it is no scenario nor config."""
    if not isinstance(doc, dict) or not doc:
        return None
    keys = set(doc)
    if "qp_pairs" in doc:
        return doc
    if keys <= CONFIG_SECTIONS:
        return {"name": "readme_config", "config": doc, "qp_pairs": [{}]}
    if keys <= SCENARIO_KEYS:
        return {"name": "readme_fragment", "qp_pairs": [{}], **doc}
    return None


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_code_block(case):
    path, line, info, body = case
    assert info in KNOWN, (f"{where(path, line)}: a code block with info string {info!r}; use one of "
                           f"{sorted(KNOWN)} (tests/README.md says what each means)")
    if info == "sh":
        run_in_root(["bash", "-e", "-o", "pipefail"], "block.sh", body, path, line)
    elif info == "sh norun":
        check_cli_lines(body, path, line)
    elif info == "python":
        run_in_root([sys.executable], "block.py", body, path, line)
    elif info == "python norun":
        compile(body, where(path, line), "exec")
    elif info == "yaml":
        doc = yaml.safe_load(body)
        scenario = scenario_from(doc)
        if scenario is None:
            return
        with tempfile.TemporaryDirectory(prefix="readme-yaml-") as tmp:
            file = Path(tmp) / "readme_block.yaml"
            file.write_text(body if scenario is doc else yaml.safe_dump(scenario), encoding="utf-8")
            proc = subprocess.run([str(BIN / "irdma-sim"), "check", str(file)], capture_output=True, text=True,
                                  env=environment(), timeout=BLOCK_TIMEOUT)
            assert proc.returncode == 0, f"{where(path, line)}: irdma-sim check refused it\n{proc.stdout}{proc.stderr}"


def test_every_readme_was_found():
    names = {str(p.relative_to(SOURCE)) for p in readmes()}
    assert "README.md" in names
    assert not any(n.startswith(("build", "out/", "tests/fuzz/corpus")) for n in names), names


def test_the_top_readme_reads_in_ten_minutes():
    lines = (SOURCE / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < 250, f"README.md has {lines} lines: move detail into the README of the folder it describes"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path):
    """The anchors GitHub makes of a Markdown file's headings (outside code blocks)."""
    found, seen, in_code = set(), {}, False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if FENCE.match(line):
            in_code = not in_code
            continue
        m = re.match(r"^#{1,6} +(.*?) *#*$", line)
        if in_code or not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


@pytest.mark.parametrize("path", readmes(), ids=lambda p: str(p.relative_to(SOURCE)))
def test_relative_links_lead_somewhere(path):
    text = path.read_text(encoding="utf-8")
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue
        line = text.count("\n", 0, m.start()) + 1
        name, _, anchor = target.partition("#")
        file = (path.parent / name).resolve() if name else path
        assert file.exists(), f"{where(path, line)}: the link {target} leads nowhere"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{where(path, line)}: {file.name} has no heading for #{anchor}"


DATE = re.compile(r"\b(19|20)\d\d-(0[1-9]|1[0-2])(-\d\d)?\b")


@pytest.mark.parametrize("path", readmes(), ids=lambda p: str(p.relative_to(SOURCE)))
def test_no_dated_figures(path):
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        m = DATE.search(line)
        assert not m, (f"{where(path, number)}: a date ({m.group(0)}) in a README: figures are `make bench`'s to "
                       f"print, and history is git's")
