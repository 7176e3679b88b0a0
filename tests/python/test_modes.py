"""The smoke scenario under other configurations: loosely-timed sync, the RTL CQE
formatter inside the CQ engine, 64-byte CQEs, unsignaled sends."""

import bisect
import json

import pytest
import yaml

import irdma_sim
from irdma_sim.trace import lines as trace_lines


def variant(scenario, tmp_path, name, traffic=None, **device_or_sync):
    doc = yaml.safe_load(open(scenario("smoke.yaml")))
    cfg = doc.setdefault("config", {})
    for section, values in device_or_sync.items():
        cfg.setdefault(section, {}).update(values)
    doc["traffic"].update(traffic or {})
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
    rtl_path = variant(scenario, tmp_path, "rtl", device={"formatter": "rtl", "rtl_vcd": "formatter.vcd"})
    rtl = irdma_sim.run(rtl_path, tmp_path / "rtl")
    assert tlm["passed"] and rtl["passed"]
    for name in ("trace.bin", "completions.jsonl"):
        assert (tmp_path / "tlm" / name).read_bytes() == (tmp_path / "rtl" / name).read_bytes(), name

    # The waveform is in simulated time: every CQE the trace shows was formatted, its
    # clock edges dumped, in the few nanoseconds before the engine logged it (its halves'
    # writes, 7 cycles of 2 ns each, and the 3 of its response come between).
    vcd = (tmp_path / "rtl" / "formatter.vcd").read_text()
    assert "1ps" in vcd.split("$enddefinitions")[0]
    stamps = sorted(int(line[1:]) for line in vcd.splitlines() if line.startswith("#"))
    cqes = [json.loads(line)["t_ps"] for line in trace_lines(tmp_path / "rtl" / "trace.bin") if '"ev":"cqe"' in line]
    assert len(cqes) > 10000 and stamps == sorted(set(stamps))
    for t in cqes:
        i = bisect.bisect_right(stamps, t)
        assert i and t - stamps[i - 1] <= 40_000, f"no clock edge in the 40 ns before the CQE at {t} ps"


def test_a_waveform_needs_the_rtl_formatter(scenario, tmp_path):
    path = variant(scenario, tmp_path, "vcd", device={"rtl_vcd": "x.vcd"})
    with pytest.raises(irdma_sim.RunFailed, match="device.formatter: rtl"):
        irdma_sim.run(path, tmp_path / "out")


def test_64_byte_cqes_hold_the_extended_half_in_the_same_slot(scenario, tmp_path):
    report = irdma_sim.run(variant(scenario, tmp_path, "wide", device={"cqe_64byte": True}), tmp_path / "out")
    assert report["passed"], [c for c in report["checks"] if not c["passed"]]
    data_cqes = [json.loads(line) for line in trace_lines(tmp_path / "out" / "trace.bin") if '"ev":"cqe"' in line]
    data_cqes = [c for c in data_cqes if c["cq"] != 0]
    extended = [c for c in data_cqes if len(c["bytes"]) == 128]
    assert len(extended) == report["counts"]["extended_cqes"] > 0
    # 64-byte slots: consecutive CQEs of one CQ are 64 bytes apart, one slot each.
    by_cq = {}
    for c in data_cqes:
        by_cq.setdefault(c["cq"], []).append(c)
    for cqes in by_cq.values():
        for a, b in zip(cqes, cqes[1:]):
            if b["slot"] == a["slot"] + 1:
                assert int(b["addr"], 16) - int(a["addr"], 16) == 64


def test_send_with_invalidate_reaches_the_receiver(scenario, tmp_path):
    path = variant(scenario, tmp_path, "inv", traffic={"inv_every": 3})
    report = irdma_sim.run(path, tmp_path / "out")
    assert report["passed"], [c for c in report["checks"] if not c["passed"]]
    recvs = [json.loads(line) for line in open(tmp_path / "out" / "completions.jsonl")]
    inv = [c for c in recvs if c["wc_flags"] & 4]
    assert inv and all(c["opcode"] == 128 and c["invalidate_rkey"] & 1 for c in inv)
    assert not any(c["wc_flags"] & 2 and c["wc_flags"] & 4 for c in recvs)


def test_unsignaled_sends_are_retired_by_the_next_signaled_one(scenario, tmp_path):
    path = variant(scenario, tmp_path, "unsignaled", traffic={"signal_every": 5})
    report = irdma_sim.run(path, tmp_path / "out", trace=False)
    assert report["passed"], [c for c in report["checks"] if not c["passed"]]
    counts = report["counts"]
    sends = {o["opcode"]: o["count"] for o in counts["by_opcode"]}[0]
    assert counts["sends_posted"] // 5 <= sends < counts["sends_posted"]
    assert counts["cqes_written"] == counts["completions_delivered"] == counts["recvs_posted"] + sends


def test_ud_pair_reports_source_qp_mac_vlan_and_network_type(scenario, tmp_path):
    doc = yaml.safe_load(open(scenario("smoke.yaml")))
    doc["qp_pairs"][1]["type"] = "ud"
    doc["config"]["device"].update({"ud_vlan_tci": 0xA00C, "mac": 0x02AABBCCDDEE, "ud_ipv4": False})
    path = tmp_path / "ud.yaml"
    path.write_text(yaml.safe_dump(doc))
    report = irdma_sim.run(path, tmp_path / "out")
    assert report["passed"], [c for c in report["checks"] if not c["passed"]]
    ud_recvs = [c for c in map(json.loads, open(tmp_path / "out" / "completions.jsonl"))
                if c["opcode"] == 128 and c["wc_flags"] & 1]
    assert ud_recvs
    for c in ud_recvs:
        assert c["src_qp"] != c["qp_num"]  # the sender's QP, not the receiver's
        assert c["smac"] == "02:aa:bb:cc:dd:ee" and c["vlan_id"] == 12 and c["sl"] == 5
        assert c["network_hdr_type"] == 3  # RDMA_NETWORK_IPV6
        assert c["wc_flags"] & 0x70 == 0x70  # WITH_SMAC | WITH_VLAN | WITH_NETWORK_HDR_TYPE


def test_gen3_device_reports_sq_opcodes_in_receives(scenario, tmp_path):
    doc = yaml.safe_load(open(scenario("rdma_ops.yaml")))
    doc["config"]["device"]["generation"] = 3
    path = tmp_path / "gen3.yaml"
    path.write_text(yaml.safe_dump(doc))
    report = irdma_sim.run(path, tmp_path / "out")
    assert report["passed"], [c for c in report["checks"] if not c["passed"]]
    rq_ops = set()
    for ev in map(json.loads, trace_lines(tmp_path / "out" / "trace.bin")):
        if ev["ev"] == "cqe" and ev["cq"] != 0:
            qword3 = int.from_bytes(bytes.fromhex(ev["bytes"][48:64]), "little")
            assert len(ev["bytes"]) in (64, 128) and int(ev["addr"], 16) % 64 == 0  # 64-byte slots
            if not qword3 >> 62 & 1:  # an RQ completion
                rq_ops.add(qword3 >> 56 & 0x3F)
    assert rq_ops <= {0x00, 0x03, 0x04, 0x05, 0x06, 0x0D} and 0x00 in rq_ops


@pytest.mark.parametrize("itr_us", [4, 20])
def test_a_moderated_vector_fires_when_its_interval_ends(scenario, tmp_path, itr_us):
    """Every CEQE's MSI-X arrives within the interval (plus the link's way) of the later
    of the CEQE and the vector's last enable, even while the engine is busy with an SQ."""
    path = variant(scenario, tmp_path, "moderated", device={"ceq_itr_us": itr_us})
    report = irdma_sim.run(path, tmp_path / "out")
    assert report["passed"], [c for c in report["checks"] if not c["passed"]]
    assert report["counts"]["interrupts_moderated"] > 0
    dyn_ctl = 0x160000
    enabled_at, waiting_since, waits = {}, {}, []
    for line in trace_lines(tmp_path / "out" / "trace.bin"):
        ev = json.loads(line)
        if ev["ev"] == "mmio_write" and dyn_ctl <= int(ev["off"], 16) < dyn_ctl + 0x100:
            if int(ev["value"], 16) & 1:
                enabled_at[(int(ev["off"], 16) - dyn_ctl) // 4] = ev["t_ps"]
        elif ev["ev"] == "ceqe":
            waiting_since.setdefault(ev["ceq"], ev["t_ps"])  # CEQ k raises vector k
        elif ev["ev"] == "msix" and ev["data"] in waiting_since:
            since = max(waiting_since.pop(ev["data"]), enabled_at.get(ev["data"], 0))
            waits.append(ev["t_ps"] - since)
    assert not waiting_since, "a CEQE never got its MSI-X"
    assert len(waits) == report["counts"]["interrupts_raised"]
    link_ps = 1_000_000  # the MSI write's serialisation and latency, with room to spare
    assert max(waits) <= itr_us * 1_000_000 + link_ps, f"an MSI-X waited {max(waits) / 1e6} us"


@pytest.mark.parametrize("generation", [2, 3])
def test_writes_never_land_on_a_write_with_immediate_not_yet_checked(tmp_path, generation):
    """WRITE_WITH_IMMs are checked in the receiver's window when their receive completes;
    with its interrupts moderated that comes well after the sender's own completion, and a
    sender reusing the window slot then overwrote the bytes before the check (a false
    payload_integrity failure on every seed)."""
    path = tmp_path / "writes.yaml"
    path.write_text(yaml.safe_dump({
        "name": "writes",
        "config": {"device": {"num_ceqs": 2, "ceq_itr_us": 100, "generation": generation}, "host": {"cpus": 2}},
        "qp_pairs": [{"name": "p", "sq_depth": 16, "rq_depth": 16}],
        "traffic": {"ops": ["write", "write_imm"], "signal_every": 4, "sends_per_qp": 600},
    }))
    for seed in (1, 2):
        report = irdma_sim.run(path, tmp_path / f"out{seed}", seed=seed, trace=False)
        assert report["passed"], [c for c in report["checks"] if not c["passed"]]
        assert report["counts"]["completions_delivered"] > 600

