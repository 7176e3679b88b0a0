"""A device that writes an extended CQE's main half first (config.device.cqe_main_half_first),
as a driver developer uses it: the shipped scenario holds over seeds 1-20 with polls meeting
main halves whose extended half had not landed; the device's usual order never shows the
poll path one; a served model writes so too; 64-byte CQEs, where the order is unsafe, and the
RTL CQ writer refuse it."""

import irdma_sim

from conftest import failed_checks


def test_polls_meet_main_halves_before_their_extended_half_and_nothing_is_lost_over_seeds_1_to_20(scenario, tmp_path):
    waits = []
    for seed in range(1, 21):
        report = irdma_sim.run(scenario("cqe_halves.yaml"), tmp_path / str(seed), seed=seed, trace=False)
        assert report["passed"], (seed, failed_checks(report))
        counts = report["counts"]
        assert counts["extended_cqes"] > 0
        waits.append(counts["ext_half_waits"])
    assert min(waits) > 0, waits


def test_written_extended_half_first_no_poll_meets_a_main_half_alone(variant, tmp_path):
    # The same faults: pieces of one write land in address order, and a write does not pass
    # the one before it, so the extended half is whole before the main half's valid qword.
    path = variant("cqe_halves.yaml", "    cqe_main_half_first: true\n", "")
    for seed in range(1, 4):
        report = irdma_sim.run(path, tmp_path / str(seed), seed=seed, trace=False)
        assert report["passed"], (seed, failed_checks(report))
        assert report["counts"]["ext_half_waits"] == 0, seed


def test_the_rtl_cq_writer_refuses_it(refused_variant):
    err = refused_variant("cqe_halves.yaml", "    cqe_main_half_first: true\n",
                          "    cqe_main_half_first: true\n    cq_writer: rtl\n")
    assert "key 'cqe_main_half_first': the RTL CQ writer writes the extended half first" in err, err


def test_64_byte_cqes_refuse_it(refused_variant):
    # A 64-byte slot's second half is written only for extended CQEs: after a pass of plain
    # ones it holds a valid bit two passes old, which reads as current (allowed, a run
    # delivered an older CQE's immediate data: the main half must land last).
    err = refused_variant("cqe_halves.yaml", "    cqe_main_half_first: true\n",
                          "    cqe_main_half_first: true\n    cqe_64byte: true\n")
    assert "with 64-byte CQEs only an extended CQE writes its slot's second half" in err, err
    err = refused_variant("cqe_halves.yaml", "    cqe_main_half_first: true\n",
                          "    cqe_main_half_first: true\n    generation: 3\n")
    assert "with 64-byte CQEs" in err, "GEN_3's default CQE size is 64 bytes"


def test_a_served_model_writes_main_halves_first_too(scenario, run_scenario_file, tmp_path):
    # The device's order is its own (the link's faults are the in-process simulation's).
    text = open(scenario("cqe_halves.yaml")).read()
    start, end = text.index("  link:\n"), text.index("  host:\n")
    path = tmp_path / "served.yaml"
    path.write_text(text[:start] + text[end:])
    proc = run_scenario_file(str(path), tmp_path / "out", "--no-trace", "--backend", "vfio-user", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED" in proc.stdout
