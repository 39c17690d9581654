"""Exact boundaries of contact awareness (issue 35, items 14 and 17).

* Thresholds (Contact.msg, docs/math.md 8.6): contact is entered when |r_i| > enter_i for
  some joint and left when |r_i| <= leave_i for every joint; while in contact the joints
  with |r_i| > leave_i carry it (isolation: the most distal of them). The tests put |r_i|
  EXACTLY on enter and on leave (and 2^-40 beyond) in every path that decides it:
  ``ContactDetector.update`` (numpy), ``ContactDetector.update_into`` (the numba kernel),
  and through a real observer ``ContactMonitor.update`` (MomentumObserver.update +
  ContactDetector.update) and ``ContactMonitor.update_terms`` (the fused
  ``observe_contact`` kernel the node runs). The observer is made to produce exactly the
  wanted residual: the arm at rest (p = 0, C^T qd = 0), effort "minus_gravity", timing
  "held" and K_O h = 1000 (1 - a = -expm1(-1000) = 1.0 exactly), so r_k = -tau_k
  exactly; each test first asserts that the residual IS the threshold, bit for bit.
* Coulomb friction at exactly qd = 0 (a stopped driver sends 0.0, or -0.0): the model's
  tau_fr = viscous qd + coulomb sign(qd) with sign(0) = 0. Reference: the 2R closed forms
  (test_closed_forms' Planar2R), friction written out here with the stopped joint's
  Coulomb term 0; a sign(0) = +1 anywhere leaves -coulomb_i in r_i.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from manip_dynamics import RobotModel
from manip_dynamics.core.contact.detector import ContactDetector
from manip_dynamics.core.contact.observer import MomentumObserver
from manip_dynamics.rules.contact_monitor import ContactMonitor, ObserverOptions

from .. import urdf_factory as uf
from ..dynamics.test_closed_forms import GRAVITY, Planar2R

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ARM = dict(m1=1.3, m2=0.8, l1=0.6, l2=0.45, c1=(0.25, 0.03), c2=(0.2, -0.04), I1=0.02, I2=0.01)
ENTER, LEAVE = np.array([1.0, 2.0]), np.array([0.5, 1.0])     # dyadic: exact arithmetic
# just above (2^-40: every value a multiple of 2^-40 below 4, so the observer's sums are exact)
UP, DOWN = ENTER + 2.0 ** -40, LEAVE + 2.0 ** -40


def arm_xml(viscous=(0.0, 0.0), coulomb=(0.0, 0.0)):
    p = ARM
    return uf.planar_2r(p["m1"], p["m2"], p["l1"], p["l2"], p["c1"], p["c2"],
                        uf.planar_inertia(p["I1"]), uf.planar_inertia(p["I2"]),
                        damping=viscous, friction=coulomb)


@pytest.fixture(scope="module")
def arm():
    return RobotModel.from_urdf_string(arm_xml(), gravity=GRAVITY)


# (residual, in contact after it, event, isolated joint): every |r_i| exactly on a threshold
# or 2^-40 beyond it; signs mixed (|r| is compared)
SEQUENCE = [
    ([ENTER[0], 0.0], False, "", -1),                    # exactly enter on joint 0: free
    ([-ENTER[0], ENTER[1]], False, "", -1),              # exactly enter on both: free
    ([UP[0], 0.0], True, "enter", 0),                    # just above: entered
    ([LEAVE[0], -LEAVE[1]], False, "leave", -1),         # exactly leave on every joint: left
    ([0.0, -UP[1]], True, "enter", 1),
    ([DOWN[0], LEAVE[1]], True, "", 0),                  # joint 1 exactly leave: not carrying
    ([-LEAVE[0], DOWN[1]], True, "", 1),                 # joint 0 exactly leave: not carrying
    ([LEAVE[0], LEAVE[1]], False, "leave", -1),
]


def check_sequence(decide):
    """decide(k, r) -> (in_contact, event, joint) for sample k: each as SEQUENCE says."""
    for k, (r, inside, event, joint) in enumerate(SEQUENCE):
        assert decide(k, np.array(r, dtype=float)) == (inside, event, joint), (k, r)


def test_update_exactly_on_enter_and_leave(arm):
    det = ContactDetector(arm, enter=ENTER, leave=LEAVE)

    def decide(k, r):
        s = det.update(0.01 * k, r)
        return s.in_contact, s.event, s.joint
    check_sequence(decide)


def test_update_into_exactly_on_enter_and_leave(arm):
    det = ContactDetector(arm, enter=ENTER, leave=LEAVE)
    events = ("", "enter", "leave")

    def decide(k, r):
        event, joint = det.update_into(0.01 * k, r)
        return det.in_contact, events[event], joint
    check_sequence(decide)


def exact_monitor(model, **kw):
    """A monitor whose residual after each sample is exactly -tau (module docstring)."""
    options = ObserverOptions(gains=(1e5,), enter=tuple(ENTER), hysteresis=0.5,
                              effort="minus_gravity", timing="held", max_gap=0.05, **kw)
    assert options.leave == tuple(LEAVE)
    return ContactMonitor(model, options, "tip")


@pytest.mark.parametrize("path", ["update", "update_terms"])
def test_observer_paths_exactly_on_enter_and_leave(arm, path):
    """The residual of a real observer step (both of the node's paths) put exactly on the
    thresholds: the same decisions as the detector's."""
    monitor = exact_monitor(arm)
    q, qd = np.array([0.4, -1.1]), np.zeros(2)
    terms, momentum = arm.compute_all(q, qd, "tip", momentum=True)
    assert not momentum.p.any() and not momentum.ct.any()

    def feed(t, tau):
        if path == "update":
            res = monitor.update(t, q, qd, tau)
            return res.residual, res.contact.in_contact, res.contact.event, res.contact.joint
        live = monitor.update_terms(t, q, qd, tau, terms, momentum)
        return live.residual.copy(), live.in_contact, live.contact_event, live.joint

    r, inside, _, _ = feed(0.0, np.zeros(2))                # "start": r = 0
    assert not r.any() and not inside

    def decide(k, want):
        r, inside, event, joint = feed(0.01 * (k + 1), -want)
        np.testing.assert_array_equal(r, want)               # exactly the threshold
        return inside, event, joint
    check_sequence(decide)


# =================================================================== Coulomb at qd = 0
VISCOUS, COULOMB = np.array([0.7, 0.3]), np.array([0.9, 0.4])
TAU_EXT, K_O = np.array([1.5, -0.7]), np.array([20.0, 35.0])


@pytest.fixture(scope="module")
def friction_arm():
    """(model with the URDF's damping and friction, closed form without)."""
    return (RobotModel.from_urdf_string(arm_xml(VISCOUS, COULOMB), gravity=GRAVITY),
            Planar2R(**ARM))


def friction_closed_form(qd):
    """viscous qd + coulomb sign(qd) with the stopped joints' Coulomb term 0 (written out:
    no np.sign)."""
    moving = [1.0 if v > 0 else -1.0 if v < 0 else 0.0 for v in qd]
    return VISCOUS * qd + COULOMB * np.array(moving)


def stopped_or_spinning(cf, kind, t):
    """(q, qd, tau_m) at t: "stopped" the arm held still (qd = (0.0, -0.0), what a stopped
    driver sends); "spinning" q1 = 0.3 + 2.5 t with joint 2 stopped (qd2 = 0.0). tau_m =
    c + g + tau_fr - tau_ext from the closed forms."""
    if kind == "stopped":
        q, qd = np.array([0.4, -1.1]), np.array([0.0, -0.0])
    else:
        q, qd = np.array([0.3 + 2.5 * t, 0.9]), np.array([2.5, 0.0])
    return q, qd, cf.c(q, qd) + cf.g(q) + friction_closed_form(qd) - TAU_EXT


def friction_residuals(model, path, t, samples):
    """r (N, n) of an observer with friction=True (gains K_O) fed (t_k, q, qd, tau) along
    ``path``: MomentumObserver.run, .update, .update_terms, or ContactMonitor.update_terms
    ("observe_contact": the node's numba kernel)."""
    options = dict(gains=K_O, friction=True, max_dt=0.05)
    if path == "run":
        return MomentumObserver(model, **options).run(t, *(np.array(a) for a in zip(*samples)))
    if path == "observe_contact":
        monitor = ContactMonitor(model, ObserverOptions(
            gains=tuple(K_O), enter=(100.0,), friction=True, max_gap=0.05), "tip")
        return np.array([monitor.update_terms(tk, q, qd, tau, *model.compute_all(
            q, qd, "tip", momentum=True)).residual.copy() for tk, (q, qd, tau) in zip(t, samples)])
    obs = MomentumObserver(model, **options)
    rows = []
    for tk, (q, qd, tau) in zip(t, samples):
        if path == "update":
            rows.append(obs.update(tk, q, qd, tau).residual)
        else:
            terms, momentum = model.compute_all(q, qd, "tip", momentum=True)
            obs.update_terms(tk, momentum.p, momentum.ct, terms.g, tau, qd)
            rows.append(obs.residual_buffer.copy())
    return np.array(rows)


@pytest.mark.parametrize("kind", ["stopped", "spinning"])
@pytest.mark.parametrize("path", ["update", "run", "update_terms", "observe_contact"])
def test_coulomb_friction_at_exactly_zero_velocity(friction_arm, kind, path):
    """friction=True, a joint at exactly qd = 0: r(t_k) = (1 - exp(-K_O t_k)) tau_ext (the
    exact first-order response, as with no friction at all), in every observer path; with
    sign(0) = +1 the stopped joint's r would be off by -coulomb_i (0.4 or 0.9 N*m)."""
    model, cf = friction_arm
    t = np.concatenate(([0.0], np.cumsum(np.random.default_rng(8).uniform(1e-3, 0.02, 80))))
    samples = [stopped_or_spinning(cf, kind, tk) for tk in t]
    r = friction_residuals(model, path, t, samples)
    expected = -np.expm1(-np.outer(t, K_O)) * TAU_EXT
    assert math.isclose(expected[-1, 1], TAU_EXT[1], rel_tol=1e-6)       # settled
    np.testing.assert_allclose(r, expected, rtol=0, atol=1e-10)


# ====================================== the side file's friction model in every path
FC_NEG, OFFSET, WIDTH = np.array([0.5, 0.6]), np.array([-0.2, 0.15]), np.array([0.0, 0.3])


def friction_model_closed_form(qd):
    """viscous qd + (coulomb if qd > 0, coulomb_negative if qd < 0) s(qd) + offset, s =
    sign (joint 1) or tanh(qd / 0.3) (joint 2), written out (docs/side_file.md)."""
    out = []
    for i, v in enumerate(qd):
        s = math.tanh(v / WIDTH[i]) if WIDTH[i] > 0 else (1.0 if v > 0 else -1.0 if v < 0
                                                          else 0.0)
        out.append(VISCOUS[i] * v + (COULOMB[i] if v > 0 else FC_NEG[i]) * s + OFFSET[i])
    return np.array(out)


@pytest.mark.parametrize("speed", [2.5, -2.5, 0.1])
@pytest.mark.parametrize("path", ["update", "run", "update_terms", "observe_contact"])
def test_the_friction_model_is_subtracted_in_every_path(friction_arm, speed, path):
    """Issue 34 item 4: Coulomb per direction, an offset and a smooth sign (a side file's
    terms, RobotModel.with_friction) reach the observer's friction (its numba kernel too):
    r(t_k) = (1 - exp(-K_O t_k)) tau_ext, joint 1 at `speed`, joint 2 moving slowly within
    its tanh width."""
    model, cf = friction_arm
    model = model.with_friction(coulomb_negative=FC_NEG, offset=OFFSET, width=WIDTH)
    t = np.concatenate(([0.0], np.cumsum(np.random.default_rng(9).uniform(1e-3, 0.02, 80))))

    def sample(tk):
        q, qd = np.array([0.3 + speed * tk, 0.9 - 0.05 * tk]), np.array([speed, -0.05])
        return q, qd, cf.c(q, qd) + cf.g(q) + friction_model_closed_form(qd) - TAU_EXT

    samples = [sample(tk) for tk in t]
    r = friction_residuals(model, path, t, samples)
    expected = -np.expm1(-np.outer(t, K_O)) * TAU_EXT
    # 1e-8: joint 2 moves, so p = M(q2) qd changes within a step and the step's constant-u
    # assumption leaves ~1e-9 (the friction itself: a wrong term is off by >= 0.05 N*m)
    np.testing.assert_allclose(r, expected, rtol=0, atol=1e-8)
