"""A sweep as a JUnit XML report, as Jenkins and GitLab read it: one testsuite per
scenario, one testcase per seed. A failed run is a <failure> listing each failed check
and its detail; a run that could not run is an <error>; an interrupted one is <skipped>.
"""

import xml.etree.ElementTree as ET
from pathlib import Path

from irdma_sim.sweep import ERROR, FAIL, INTERRUPTED


def junit_tree(outcomes, sweep_name="irdma-sim sweep"):
    root = ET.Element("testsuites", name=sweep_name)
    suites = {}
    for o in outcomes:
        suite = suites.get(o.name)
        if suite is None:
            suite = suites[o.name] = ET.SubElement(root, "testsuite", name=o.name, file=str(o.scenario))
        case = ET.SubElement(suite, "testcase", classname=o.name, name=f"seed {o.seed}",
                             time=f"{(o.report or {}).get('wall_time_s') or 0:.3f}")
        ET.SubElement(case, "system-out").text = f"outputs in {o.out}"
        if o.status == FAIL:
            failed = [c for c in o.report["checks"] if not c["passed"]]
            node = ET.SubElement(case, "failure", message="failed: " + ", ".join(c["name"] for c in failed),
                                 type="check")
            node.text = "\n".join(f"{c['name']}: {c.get('detail', '')}" for c in failed)
        elif o.status == ERROR:
            ET.SubElement(case, "error", message=o.error or "could not run", type="run").text = o.error
        elif o.status == INTERRUPTED:
            ET.SubElement(case, "skipped", message=f"interrupted: {o.error or o.report['interrupted']['signal']}")
    for element in [root, *suites.values()]:
        cases = element.iter("testcase")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        time = 0.0
        for case in cases:
            counts["tests"] += 1
            counts["failures"] += case.find("failure") is not None
            counts["errors"] += case.find("error") is not None
            counts["skipped"] += case.find("skipped") is not None
            time += float(case.get("time"))
        for key, value in counts.items():
            element.set(key, str(value))
        element.set("time", f"{time:.3f}")
    return ET.ElementTree(root)


def write_junit(path, outcomes):
    """Writes the report to `path` (through a temporary file, so a reader never sees half)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = junit_tree(outcomes)
    ET.indent(tree)
    tmp = path.with_name(path.name + ".tmp")
    tree.write(tmp, encoding="utf-8", xml_declaration=True)
    tmp.replace(path)
