"""A pytest plugin for suites that drive the simulated device: a test marked
`@pytest.mark.fresh_process` runs in a forked child of its own, so each gets the one
SystemC elaboration a process may have (an irdma_sim.verbs.Context, an irdma_sim.Session)
without forking by hand. Fixtures are made in the parent and handed over; a failure in the
child, or its death, fails the test with the child's traceback.

Enable it in a conftest.py: `pytest_plugins = ["irdma_sim.pytest_plugin"]`.
"""

import os
import sys
import traceback

import pytest

SKIPPED = 3  # the child's exit status for a test that skipped itself


def pytest_configure(config):
    config.addinivalue_line("markers", "fresh_process: run the test in a forked child process of its own")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if pyfuncitem.get_closest_marker("fresh_process") is None:
        return None
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the test, say how it went, leave without pytest's teardown
        os.close(r)
        status = 0
        try:
            pyfuncitem.obj(**args)
        except pytest.skip.Exception as e:  # a skip is the test's verdict, not a failure
            status = SKIPPED
            os.write(w, str(e.msg).encode())
        except BaseException:  # noqa: BLE001 - everything the test raised goes to the parent
            status = 1
            os.write(w, traceback.format_exc().encode())
        sys.stdout.flush()
        sys.stderr.flush()
        os.close(w)
        os._exit(status)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    _, wait_status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    if code == SKIPPED:
        pytest.skip(b"".join(chunks).decode(errors="replace"))
    if code != 0:
        told = b"".join(chunks).decode(errors="replace")
        pytest.fail(f"in its fresh process (exit {code}):\n{told or 'the process died without a word'}", pytrace=False)
    return True
