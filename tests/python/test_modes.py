"""The smoke scenario under the other device configurations: loosely-timed sync and the
RTL CQE formatter inside the CQ engine."""

import yaml

import irdma_sim


def variant(scenario, tmp_path, name, **device_or_sync):
    doc = yaml.safe_load(open(scenario("smoke.yaml")))
    cfg = doc.setdefault("config", {})
    for section, values in device_or_sync.items():
        cfg.setdefault(section, {}).update(values)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_loosely_timed_mode_passes_every_check(scenario, tmp_path):
    path = variant(scenario, tmp_path, "loose", sync={"mode": "loose", "quantum_ns": 2000})
    report = irdma_sim.run(path, tmp_path / "out", trace=False)
    assert report["passed"], [c for c in report["checks"] if not c["passed"]]
    assert report["counts"]["completions_delivered"] == 12000


def test_rtl_formatter_writes_the_same_bytes_as_the_tlm_one(scenario, tmp_path):
    tlm = irdma_sim.run(scenario("smoke.yaml"), tmp_path / "tlm")
    rtl_path = variant(scenario, tmp_path, "rtl", device={"formatter": "rtl"})
    rtl = irdma_sim.run(rtl_path, tmp_path / "rtl")
    assert tlm["passed"] and rtl["passed"]
    for name in ("trace.jsonl", "completions.jsonl"):
        assert (tmp_path / "tlm" / name).read_bytes() == (tmp_path / "rtl" / name).read_bytes(), name
