"""Every device-fatal fault at once (scenarios/fatal_faults.yaml): whichever strikes first
gives the device up, once, and what strikes after changes nothing the checks can see."""

from conftest import passing_runs


def first_cause(counts):
    causes = [cause for cause, key in (("cqp_timeout", "device_resets_on_cqp_timeout"),
                                       ("pci_error", "device_resets_on_pci_error"),
                                       ("function_reset", "function_resets_found")) if counts[key]]
    assert len(causes) == 1, counts  # given up once, for one cause
    return causes[0]


def test_whichever_fatal_fault_strikes_first_gives_the_device_up_once_over_seeds_1_to_20(scenario, tmp_path):
    causes = set()
    for seed, report in passing_runs(scenario("fatal_faults.yaml"), tmp_path, range(1, 21)):
        counts = report["counts"]
        assert counts["device_resets_requested"] == 1 and counts["device_fatal_events"] == 1, (seed, counts)
        assert counts["function_resets"] == 1, seed  # 4 ms in, after the device was given up or not
        causes.add(first_cause(counts))
    assert causes == {"pci_error", "function_reset", "cqp_timeout"}, causes  # each cause comes first in some run
