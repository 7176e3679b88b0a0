"""irdma-sim: a SystemC model of the Intel irdma completion-queue engine and its driver.

Scenarios run each in a fresh process (SystemC elaborates once per process):

    from irdma_sim import run
    report = run("scenarios/smoke.yaml", out="out/smoke", seed=1)
    assert report["passed"]

Step-by-step driving, one Session per process:

    from irdma_sim import Session
    s = Session()
    cq = s.pool_get(64)
    a, b = s.create_qp_pair(cq, cq)
"""

from irdma_sim._irdma_sim import ScenarioError, Session, VerbsError, __version__, check_scenario
from irdma_sim.runner import ReplayFailed, RunFailed, replay, run, run_many

__all__ = ["__version__", "ScenarioError", "Session", "VerbsError", "check_scenario", "ReplayFailed", "RunFailed", "replay",
           "run", "run_many"]
