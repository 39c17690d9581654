"""`python -m manip_dynamics.demo_identification` end to end (about 2 minutes).

What it must show (issue 14): on the MuJoCo plant with link masses and CoMs off by 10-30%
and an unknown payload, the gravity-compensation drift over 4 s with the identified
description is at least 20x smaller than with the URDF (measured: 2.5 rad -> 2.5e-3 rad,
plant friction on); the node took the identified description (the demo checks its
~/get_gravity_torques against the identified URDF, and fails otherwise); g(q) against
MuJoCo's own gravity torque of the plant improves on every moving joint (measured
8-600x per joint, 100x in norm; bounds 5x and 50x); the recording went through ROS
(recorder -> MCAP).
"""
import json

import numpy as np
import pytest
import ros_utils

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("identification_demo")
    # lockstep: the simulator waits for every answer, so the numbers do not depend on the
    # pace; up to 4x real time saves the suite the demo's waiting
    proc = ros_utils.run_demo("manip_dynamics.demo_identification", out, timeout=560,
                              args=["--real-time-factor", "4"])
    return proc, out


def test_drift_falls_twenty_fold_and_g_matches_the_plant(demo):
    proc, out = demo
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["drift_rad"]["before"]["max"] > 0.5          # the URDF's g drifts
    assert summary["drift_ratio"] >= 20
    g = summary["gravity_error_rms"]
    urdf, identified = np.array(g["urdf"][1:]), np.array(g["identified"][1:])
    assert np.all(identified < urdf / 5), (urdf, identified)
    assert np.linalg.norm(identified) < np.linalg.norm(urdf) / 50
    rep = summary["identification"]
    # held-out: the last 25% of the recording, partly at rest, where dry friction's
    # stick-slip dominates single joints (joint 5 once 0.21 against the URDF's 0.08 N m)
    assert np.linalg.norm(rep["rms_after"]) < np.linalg.norm(rep["rms_before"]) / 3
    for text in ("drift ratio", "identified", "held-out RMS"):
        assert text in proc.stdout


def test_recording_and_outputs_exist(demo):
    proc, out = demo
    assert proc.returncode == 0
    from manip_dynamics.core.identification.recording import read_joint_states
    log = read_joint_states(out / "run.mcap")
    assert log.effort is not None and log.t[-1] > 10.0           # one 10 s period, at rest after
    assert (out / "identification.png").stat().st_size > 10_000
    assert "<robot" in (out / "identified.urdf").read_text()
