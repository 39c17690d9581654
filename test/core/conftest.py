"""The core tests run with the direct kernel calls checked: every call compares its
argument types with the compiled entry point's (manip_dynamics.core.dynamics.launch._direct), so a
wrapper that ever passes another type fails here instead of reading memory wrongly."""
import pytest

from manip_dynamics.core.dynamics import launch


@pytest.fixture(autouse=True, scope="session")
def _checked_direct_calls():
    launch.check_direct_calls(True)
    yield
    launch.check_direct_calls(False)
