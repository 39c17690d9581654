"""The dynamics node's calibration run without ROS (rules.calibration_run): what a
``~/calibrate_contact`` request collects and when it is complete or given up."""
from __future__ import annotations

import math

import numpy as np
import pytest

from manip_dynamics import InputError
from manip_dynamics.rules.calibration_run import MAX_DURATION, CalibrationRun, check_duration


@pytest.mark.parametrize("bad", [-1.0, 0.0, math.nan, math.inf, MAX_DURATION + 1.0, "ten"])
def test_a_duration_that_cannot_be_collected_is_refused(bad):
    with pytest.raises(InputError, match="duration"):
        check_duration(bad)


def test_complete_when_the_stamps_span_the_duration():
    """Samples 0.01 s apart: a 0.05 s run is complete with the sample at t0 + 0.05 (the
    sixth), not before; later samples are not taken; the arrays are copies in order."""
    run = CalibrationRun(0.05, "service")
    names = ("a", "b")
    done = []
    for k in range(8):
        qd = np.array([k, -k], dtype=float)
        if run.joints(names):
            done.append(run.add(100.0 + 0.01 * k, qd * 0.5, qd, qd * 2.0, (100, k)))
        qd[:] = -99.0                                   # the caller's buffer, reused
    assert done == [False] * 5 + [True, False, False]
    assert run.complete and run.count == 6 and run.last_stamp == (100, 5)
    t, q, qd, r = run.samples()
    np.testing.assert_allclose(t, 100.0 + 0.01 * np.arange(6))
    np.testing.assert_array_equal(qd[:, 0], np.arange(6.0))
    np.testing.assert_array_equal(r, 2.0 * qd)
    np.testing.assert_array_equal(q, 0.5 * qd)


def test_another_model_or_abandon_gives_the_run_up_with_a_reason():
    run = CalibrationRun(1.0, "startup")
    assert run.joints(("a", "b")) and not run.add(0.0, [0, 0], [0, 0], [0, 0])
    assert not run.joints(("a", "c"))
    assert run.finished.is_set() and not run.complete and "robot model changed" in run.reason
    stalled = CalibrationRun(1.0, "service")
    assert not stalled.wait(0.01)
    stalled.abandon("no joint state")
    stalled.abandon("something else")                   # the first reason stays
    assert stalled.wait(0.0) and stalled.reason == "no joint state" and not stalled.complete
