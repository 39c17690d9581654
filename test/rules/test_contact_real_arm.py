"""Contact detection on the real UR10e (shared/data/ur10e-mamedov2020, skipped where absent)
through the Python API (ContactMonitor.update at the runs' own 100 Hz stamps): the model
with the authors' armature, friction and drive gains from a side file written in a temp
dir, calibrated on their identification run (issue 33). Labels and the judge:
test/ur10e_contact.py. Representative runs only (CPU); every run: benchmarks/contact_real_arm.py.

0 false contacts on every other unloaded identification run holds with the motion
thresholds (benchmarks/contact_real_arm.py shows it on all 16; here two that failed before
the known terms). Issue 33's "every push within 2 samples of the moment the measured
torque change exceeds the threshold" holds on all 10 pushes (before the rules at rest of
docs/contact.md "At rest and at the switch", on 7: -4, +7, +4 on pose 2's pushes at lines
53, 455, 750)."""
from __future__ import annotations

import numpy as np
import pytest

import ur10e_contact as U
from shared_data import require_shared_data
from manip_dynamics.rules.contact_monitor import ContactMonitor



@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """(data folder, model, drive gains, the calibration learned on the authors' run)."""
    folder = require_shared_data(U.DATA)
    model, gain = U.model_with_side_file(folder, tmp_path_factory.mktemp("ur10e"))
    cal_run = U.read_run(folder, U.CALIBRATION_RUN, model, gain)
    return folder, model, gain, U.calibrate(model, cal_run, "motion")


@pytest.mark.parametrize("name", ["validation_data/ur-20_01_17-p5.csv",
                                  "identification_data/ur-19_10_01-13_51_41.csv",
                                  "identification_data/ur-19_09_27-11_32_02.csv"])
def test_free_motion_is_contact_free_once_calibrated(arm, name):
    """A validation run and two other identification runs (11_32_02 with its garbled
    start-up rows, which the reader skips: 1 and 2 contacts entered there before it
    skipped position jumps): the default thresholds (2 N m, no friction) are in contact on
    most samples; calibrated (constant) and with the motion-following thresholds: no
    contact at all."""
    folder, model, gain, cal = arm
    run = U.read_run(folder, name, model, gain)
    default = U.replay(model, run, U.options("fixed"))
    print("in contact with the defaults:", default.in_contact.mean())
    assert default.in_contact.mean() > 0.5
    for mode in ("calibrated", "motion"):
        result = U.replay(model, run, U.options(mode), cal)
        assert not result.in_contact.any(), (mode, U.contacts(result.in_contact))


@pytest.mark.parametrize("name", ["identification_data/ur-19_10_01-14_04_13.csv",
                                  "identification_data/ur-19_10_01-14_04_41.csv"])
def test_the_motion_thresholds_known_terms_keep_a_stop_and_a_slow_start_contact_free(arm, name):
    """Two of the runs where the learned motion thresholds alone entered a contact
    (docs/contact.md): 14_04_13 at its stop (the current steps by 55 N m one sample before
    qd falls: the current's lead) and 14_04_41 at a slow start (joint 1's current 14 N m
    off the Coulomb ramp at 0.016 rad/s: the slow friction). With the known terms: none."""
    folder, model, gain, cal = arm
    run = U.read_run(folder, name, model, gain)
    result = U.replay(model, run, U.options("motion"), cal)
    assert not result.in_contact.any(), U.contacts(result.in_contact)


@pytest.mark.parametrize("name", sorted(U.PUSHES))
def test_motion_thresholds_find_every_labelled_push_and_nothing_outside(arm, name):
    """Every labelled push entered inside its label, no contact outside the labels (each
    extended by the settling time + 0.2 s: a stiction-held torque ends a contact by the
    settling rule); the constant calibrated thresholds miss some (measured 1/4 and 4/6).
    The delays (test/ur10e_contact.judge): every one within 2 samples (issue 33), measured
    1, -1, -1, 2 and 1, 1, 2, 2, 2, 1. Before the rules at rest and at the switch
    (docs/contact.md) pose 2's pushes at lines 53, 455 and 750 were -4, +7 and +4 (the
    level at the start not yet known; the torque stiction held after the previous push;
    the slow friction armed by the yield to the push itself)."""
    folder, model, gain, cal = arm
    run = U.read_run(folder, name, model, gain)
    judged = U.judge(run, U.replay(model, run, U.options("motion"), cal), U.PUSHES[name],
                     cal.settle + 0.2)
    print(judged)
    assert all(judged.found) and judged.outside == 0, judged
    for (start, _), delay in zip(U.PUSHES[name], judged.delays):
        assert abs(delay) <= 2, (start, judged.delays)
    constant = U.judge(run, U.replay(model, run, U.options("calibrated"), cal), U.PUSHES[name],
                       cal.settle + 0.2)
    assert not all(constant.found)


@pytest.mark.parametrize("name", sorted(U.PUSHES))
def test_every_label_starts_before_the_torque_leaves_its_level(arm, name):
    """The rule of test/ur10e_contact.py's docstring, on the data alone: the torque's level
    is the mean of lines start-29..start-10 (noise: their standard deviation per joint);
    no joint is more than 4 noise away from it on 3 lines in a row from start-9 up to the
    start line itself (the judge's level just before the push is then not inside the
    push's ramp). The labels found by looking alone broke it on six pushes (4-15 noise
    away on the start line)."""
    folder, model, gain, _ = arm
    run = U.read_run(folder, name, model, gain)
    for start, _end in U.PUSHES[name]:
        k = start - 1                                   # (line -> sample)
        ref = run.tau[k - 29:k - 9]
        away = (np.abs(run.tau[k - 9:k + 1] - ref.mean(axis=0)) > 4 * ref.std(axis=0)).any(axis=1)
        runs3 = away[:-2] & away[1:-1] & away[2:]
        assert not runs3.any(), (start, np.flatnonzero(runs3) + start - 9)


def test_a_payload_in_the_model_and_a_loaded_calibration_leave_loaded_runs_contact_free(arm):
    """The runs with a 2.6-2.8 kg payload are in contact on 34-71 % of their samples with
    the unloaded model (the load is an external torque). With the payload in the model (a
    point mass at tool0, the data's README) and calibrated on another loaded run
    (`15harm50secLoad`), the two shorter loaded runs enter no contact; the unloaded
    calibration with the payload in the model is not enough (the load_2600 run: 1 contact,
    20_01_31-load: 4, benchmarks/contact_real_arm.py --loaded)."""
    folder, base, gain, unloaded = arm
    loaded = base.with_payload("tool0", 2.805)
    cal = U.calibrate(loaded, U.read_run(folder, "identification_data/"
                                         "ur-20_02_19_15harm50secLoad.csv", loaded, gain), "motion")
    for name, mass in (("ur-20_01_13-load_2600.csv", 2.6), ("ur-20_01_31-load.csv", 2.805)):
        model = base.with_payload("tool0", mass)
        run = U.read_run(folder, "identification_data/" + name, model, gain)
        assert not U.replay(model, run, U.options("motion"), cal).in_contact.any(), name
    run = U.read_run(folder, "identification_data/ur-20_01_31-load.csv", loaded, gain)
    assert U.replay(loaded, run, U.options("motion"), unloaded).in_contact.any()


def test_the_nodes_path_gives_the_same_thresholds_and_contacts(arm):
    """The node feeds ContactMonitor.update_terms (the observer, detector and tip wrench in
    one numba call, with its own compute_all terms); the tests above feed update. On
    push_pose_2 with the motion thresholds: the same enter thresholds on every sample (to
    the bit: the rules at rest see the same residuals), the same contact state, residuals
    equal to round-off (measured 1.4e-14 N m)."""
    folder, model, gain, cal = arm
    run = U.read_run(folder, "collision/ur-20_01_22-push_pose_2.csv", model, gain)
    python, node = (ContactMonitor(model, U.options("motion"), "tool0", cal) for _ in range(2))
    for k in range(len(run.t)):
        state = python.update(run.t[k], run.q[k], run.qd[k], run.tau[k])
        live = node.update_terms(run.t[k], run.q[k], run.qd[k], run.tau[k],
                                 *model.compute_all(run.q[k], run.qd[k], "tool0", momentum=True))
        assert np.array_equal(python.detector.enter, node.detector.enter), k
        assert state.contact.in_contact == live.in_contact, k
        np.testing.assert_allclose(live.residual, state.residual, rtol=0, atol=1e-9)
