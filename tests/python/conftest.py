import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["irdma_sim.pytest_plugin"]

SOURCE = Path(os.environ.get("IRDMA_SIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))


@pytest.fixture
def source_dir():
    return SOURCE


@pytest.fixture
def scenario(source_dir):
    return lambda name: str(source_dir / "scenarios" / name)


@pytest.fixture
def run_python():
    """Runs a snippet in a fresh interpreter (one SystemC elaboration each)."""

    def run(code):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)

    return run
