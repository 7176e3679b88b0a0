"""Every device-fatal fault at once (scenarios/fatal_faults.yaml): whichever strikes first
gives the device up, once, and what strikes after changes nothing the checks can see."""

import irdma_sim

from conftest import failed_checks


def first_cause(counts):
    causes = [c for c in ("cqp_timeout", "pci_error", "function_reset") if counts["device_resets_on_" + c]]
    assert len(causes) == 1, counts  # given up once, for one cause
    return causes[0]


def test_whichever_fatal_fault_strikes_first_gives_the_device_up_once_over_seeds_1_to_20(scenario, tmp_path):
    causes = set()
    for seed in range(1, 21):
        report = irdma_sim.run(scenario("fatal_faults.yaml"), tmp_path / str(seed), seed=seed, trace=False)
        assert report["passed"], (seed, failed_checks(report))
        counts = report["counts"]
        assert counts["device_resets_requested"] == 1 and counts["device_fatal_events"] == 1, (seed, counts)
        assert counts["function_resets"] == 1, seed  # 4 ms in, after the device was given up or not
        causes.add(first_cause(counts))
    assert causes == {"pci_error", "function_reset", "cqp_timeout"}, causes  # each cause comes first in some run
