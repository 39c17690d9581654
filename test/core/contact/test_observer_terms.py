"""The observer's per-state path (issue 25) against today's MomentumObserver, sample by sample.

``MomentumObserver.update_terms`` takes p = M qd, C^T qd and g from the caller (the node's
compute_all(..., momentum=True) run) and steps in buffers; ``ContactDetector.update_into``
and ``WrenchSolver`` do the detection, isolation and tip wrench without temporaries.

References (independent of the new code):

* ``MomentumObserver.update`` (unchanged: M and C from their own kernels, numpy products):
  fed the SAME p, beta terms (computed here with update's own expressions), the new step
  must give the same bits; fed the kernel's O(n) p and C^T qd, it differs only by the
  round-off of those sums (bounded below);
* ``ContactDetector.update`` and ``tip_wrench`` (unchanged) on the same residuals;
* Pinocchio for p and C^T qd themselves: test_pinocchio.test_momentum_terms.

Streams: the Panda's recorded excitation (test/core/identification/data/panda_excitation.json, a
Fourier trajectory) with measured torques from inverse dynamics plus a pushed contact and noise,
and random states; variable steps, gaps longer than max_dt, NaN efforts (refused, not
integrated), resets and zeroing in between.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from manip_dynamics import InputError, RobotModel
from manip_dynamics.core.contact.detector import (ContactDetector, WrenchSolver, observe_contact,
                                                  tip_wrench)
from manip_dynamics.core.contact.observer import MomentumObserver
from manip_dynamics.rules.contact_monitor import ContactMonitor, ObserverOptions

from .. import urdf_factory as uf
from ..identification.identification_plant import excitation
from ..dynamics.test_pinocchio import PANDA

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

OPTIONS = [dict(), dict(effort="minus_gravity"), dict(friction=True), dict(timing="held"),
           dict(gap="reset", friction=True, timing="held")]


@pytest.fixture(scope="module")
def panda():
    """example-robot-data's Panda, fingers fixed (7 DOF), with friction for friction=True."""
    with open(PANDA, encoding="utf-8") as fh:
        xml = fh.read()
    xml = re.sub(r'(<joint name="panda_finger_joint[12]" type=")prismatic', r"\1fixed", xml)
    model = RobotModel.from_urdf_string(xml)
    return model.with_friction(viscous=np.linspace(0.5, 1.1, 7),
                               coulomb=np.linspace(0.2, 0.8, 7))


def stream(model, kind, seed, count=400):
    """(t, q, qd, tau) of ``count`` samples: "recorded" (the excitation trajectory, tau =
    inverse dynamics + friction + J^T F of a push from t = 0.15 s + noise) or "random"
    (independent random states). Steps of 0.2-2 ms with three gaps of 0.08-0.3 s; three
    samples carry a NaN effort."""
    rng = np.random.default_rng(seed)
    h = rng.uniform(2e-4, 2e-3, count)
    h[[60, 170, 290]] = [0.08, 0.3, 0.12]
    t = 5.0 + np.cumsum(h)
    if kind == "recorded":
        q, qd, qdd = excitation().sample(t - 5.0)
        J = model.jacobian(q, model.default_tip)
        F = np.where((t - t[0] > 0.15)[:, None], [8.0, -5.0, 3.0, 0.5, -0.4, 0.2], 0.0)
        tau = (model.inverse_dynamics(q, qd, qdd, friction=True)
               - np.einsum("nij,ni->nj", J, F) + rng.normal(0.0, 0.05, q.shape))
    else:
        lo, hi = np.array(model.position_lower), np.array(model.position_upper)
        q = rng.uniform(lo, hi, (count, model.n))
        qd = rng.normal(0.0, 1.5, (count, model.n))
        tau = rng.normal(0.0, 20.0, (count, model.n))
    tau[[33, 200, 201], [2, 0, 6]] = math.nan
    return t, q, qd, tau


def reference_terms(model, q, qd):
    """p, C^T qd, g with momentum_and_beta's own expressions (numpy products of M, C)."""
    M, C = model.mass_matrix(q), model.coriolis_matrix(q, qd)
    return ((M @ qd[..., None])[..., 0], (qd[..., None, :] @ C)[..., 0, :],
            model.gravity_torques(q))


def feed(ref, new, t, q, qd, tau, terms):
    """Both observers sample by sample; refused samples must be refused by both. Between
    samples 100 and 101 both are zeroed, between 250 and 251 both reset.
    -> (residuals of ref, of new, events equal?, the largest |p|/h + |beta| scale)."""
    out_ref, out_new = [], []
    for k in range(len(t)):
        if k == 100:
            ref.zero(), new.zero()
        if k == 250:
            ref.reset(), new.reset()
        p, ct, g = terms(k)
        try:
            step = ref.update(t[k], q[k], qd[k], tau[k])
        except InputError:
            with pytest.raises(InputError):
                new.update_terms(t[k], p, ct, g, tau[k], qd[k])
            continue
        event, dt = new.update_terms(t[k], p, ct, g, tau[k], qd[k])
        assert event == step.event and (dt == step.dt or math.isnan(dt) and math.isnan(step.dt))
        out_ref.append(step.residual)
        out_new.append(new.residual_buffer.copy())
        np.testing.assert_array_equal(new.residual, new.residual_buffer)
    assert ref.gaps == new.gaps == 3
    return np.array(out_ref), np.array(out_new)


@pytest.mark.parametrize("kind", ["recorded", "random"])
@pytest.mark.parametrize("kw", OPTIONS)
def test_same_terms_give_the_same_bits(panda, kind, kw):
    """update_terms on update's own p, C^T qd, g: every residual, event and dt identical."""
    t, q, qd, tau = stream(panda, kind, seed=len(kind) + len(kw))
    P, CT, G = reference_terms(panda, q, qd)
    ref = MomentumObserver(panda, gains=[40.0, 45, 50, 55, 60, 65, 70], max_dt=0.05, **kw)
    new = MomentumObserver(panda, gains=[40.0, 45, 50, 55, 60, 65, 70], max_dt=0.05, **kw)
    r_ref, r_new = feed(ref, new, t, q, qd, tau, lambda k: (P[k], CT[k], G[k]))
    assert len(r_ref) == len(t) - 3
    np.testing.assert_array_equal(r_new, r_ref)
    assert np.abs(r_ref).max() > 1.0          # the stream does excite the observer


@pytest.mark.parametrize("kind", ["recorded", "random"])
@pytest.mark.parametrize("kw", OPTIONS[:3])
def test_kernel_terms_equal_the_reference_to_round_off(panda, kind, kw):
    """update_terms on compute_all(momentum=True)'s p, C^T qd, g (the node's path): the
    residuals differ from update's only by the round-off of p and C^T qd, summed in
    another order. Bound: |r_new - r_ref| <= 1e-12 (max |p| / h_min + max |beta|), the
    magnitudes u is formed from (u = Delta p / h - mean beta)."""
    t, q, qd, tau = stream(panda, kind, seed=7 + len(kind))
    P, CT, G = reference_terms(panda, q, qd)
    fused = [panda.compute_all(q[k], qd[k], panda.default_tip, momentum=True)
             for k in range(len(t))]
    for k in range(len(t)):
        terms, mom = fused[k]
        np.testing.assert_array_equal(terms.g, G[k])
        scale = np.abs(P[k]).max() + np.abs(CT[k]).max() + 1.0
        assert np.abs(mom.p - P[k]).max() <= 1e-14 * scale
        assert np.abs(mom.ct - CT[k]).max() <= 1e-14 * scale
    ref = MomentumObserver(panda, gains=50.0, max_dt=0.05, **kw)
    new = MomentumObserver(panda, gains=50.0, max_dt=0.05, **kw)
    r_ref, r_new = feed(ref, new, t, q, qd, tau,
                        lambda k: (fused[k][1].p, fused[k][1].ct, fused[k][0].g))
    bound = 1e-12 * (np.abs(P).max() / np.diff(t).min() + np.abs(CT).max()
                     + np.abs(np.nan_to_num(tau)).max() + np.abs(G).max())
    assert np.abs(r_new - r_ref).max() <= bound


def test_update_terms_refuses_what_update_refuses(panda):
    """A stale stamp, a NaN, a wrong length or a list tau: InputError, state unchanged."""
    obs = MomentumObserver(panda, gains=30.0)
    z = np.zeros(7)
    obs.update_terms(1.0, z, z, z, z, z)
    before = (obs.time, obs.raw_residual)
    for t, tau in [(1.0, z), (0.5, z), (2.0, np.full(7, np.nan)), (2.0, np.zeros(6)),
                   (2.0, [0.0] * 7), (2.0, np.zeros(7, dtype=int))]:
        with pytest.raises(InputError):
            obs.update_terms(t, z, z, z, tau, z)
        assert obs.time == before[0]
        np.testing.assert_array_equal(obs.raw_residual, before[1])


def random_residuals(n, count, seed):
    """Residual streams that enter, wander and leave contact on random joints."""
    rng = np.random.default_rng(seed)
    r = rng.normal(0.0, 0.3, (count, n))
    for start in range(0, count, 40):
        j = rng.integers(0, n, 3)
        r[start:start + 25, j] += rng.normal(0.0, 3.0, 3)
    return r


@pytest.mark.parametrize("which", ["panda", "tree"])
def test_detection_and_isolation_equal_the_detector(panda, which):
    """update_into against update on the same residuals: the same contact state, event,
    isolated joint and detection time at every sample; ||r|| to round-off. A branching
    tree checks the isolation's "most distal" over branches."""
    model = panda if which == "panda" else RobotModel.from_urdf_string(
        uf.random_tree(2, with_mimic=False))
    n = model.n
    enter = np.linspace(1.0, 2.0, n)
    ref, new = ContactDetector(model, enter), ContactDetector(model, enter)
    events = set()
    for k, r in enumerate(random_residuals(n, 600, seed=n)):
        s = ref.update(0.001 * k, r)
        code, joint = new.update_into(0.001 * k, r)
        assert (new.in_contact, joint, ("", "enter", "leave")[code]) == (
            s.in_contact, s.joint, s.event)
        assert new.detection_time == s.detection_time or (
            math.isnan(new.detection_time) and math.isnan(s.detection_time))
        assert abs(new.residual_norm - s.residual_norm) <= 1e-15 * s.residual_norm
        events.add((s.event, s.joint >= 0))
    assert {("enter", True), ("leave", False), ("", True), ("", False)} <= events


def test_wrench_solver_equals_tip_wrench(panda):
    """WrenchSolver on the bundle's J against tip_wrench (numpy's SVD, einsum): the damped
    flag and the singular values equal, F to 1e-15 cond^2 ||r|| / min(sigma_min, eps)
    (cond = sigma_max / min(sigma_min, eps): the undamped path solves the normal
    equations, whose error grows with cond(J)^2; the damped path is an SVD); on random
    Panda states, at the stretched singularity, and on a 2R arm (n < 6)."""
    arm = RobotModel.from_urdf_string(uf.planar_2r(1.0, 0.8, 0.6, 0.45, (0.3, 0.0),
                                                   (0.2, 0.0), uf.planar_inertia(0.02),
                                                   uf.planar_inertia(0.01)))
    rng = np.random.default_rng(5)
    cases = [(panda, rng.uniform(-1.5, 1.5, 7)) for _ in range(40)]
    cases += [(panda, np.zeros(7)), (arm, np.array([0.3, 0.0])), (arm, np.array([0.3, 1.0]))]
    damped = set()
    for model, q in cases:
        J = model.compute_all(q, np.zeros(model.n), model.default_tip).J
        for eps in (0.01, 0.3):
            r = rng.normal(0.0, 5.0, model.n)
            ref = tip_wrench(model, q, r, model.default_tip, threshold=eps)
            solver = WrenchSolver(eps)
            was_damped = solver.solve(J, r)
            gain = 1.0 / min(ref.sigma.min(), eps)
            cond = ref.sigma.max() * gain
            assert np.abs(solver.F - ref.F).max() <= 1e-15 * cond ** 2 * np.linalg.norm(r) * gain
            assert was_damped == bool(ref.damped)
            k = len(ref.sigma)
            np.testing.assert_allclose(solver.sigma[:k], ref.sigma, rtol=0,
                                       atol=1e-13 * ref.sigma.max() * cond)
            damped.add(was_damped)
    assert damped == {True, False}


def test_monitor_update_terms_equals_update(panda):
    """ContactMonitor.update_terms (the node's path) against update on a recorded stream
    with a stale stamp and a clock restart: the same events, contact states, isolated
    links; residual and wrench to round-off."""
    t, q, qd, tau = stream(panda, "recorded", seed=3)
    t = t.copy()
    t[300:] -= 50.0                       # the clock restarts (more than max_gap back)
    options = ObserverOptions(enter=(3.0,), max_gap=0.05)
    ref, new = (ContactMonitor(panda, options, panda.default_tip) for _ in range(2))
    contacts = 0
    for k in range(len(t)):
        stamp = t[k] if k != 120 else t[119]          # a stale duplicate
        try:
            a = ref.update(stamp, q[k], qd[k], tau[k])
        except InputError:
            terms, mom = panda.compute_all(q[k], qd[k], panda.default_tip, momentum=True)
            with pytest.raises(InputError):
                new.update_terms(stamp, q[k], qd[k], tau[k], terms, mom)
            continue
        terms, mom = panda.compute_all(q[k], qd[k], panda.default_tip, momentum=True)
        b = new.update_terms(stamp, q[k], qd[k], tau[k], terms, mom)
        assert (b.event, b.in_contact, b.joint, b.link, b.contact_event) == (
            a.event, a.contact.in_contact, a.contact.joint, a.contact.link, a.contact.event)
        np.testing.assert_allclose(b.residual, a.residual, rtol=0, atol=1e-8)
        np.testing.assert_allclose(b.F, a.wrench.F, rtol=0, atol=1e-7)
        contacts += b.in_contact
    assert ref.restarts == new.restarts == 1 and contacts > 50


@pytest.mark.parametrize("kind", ["recorded", "random"])
@pytest.mark.parametrize("kw", OPTIONS)
def test_observe_contact_equals_observer_detector_and_tip_wrench(panda, kind, kw):
    """observe_contact (the observer step, detection, isolation and tip wrench in one
    numba call: the node's path) against today's MomentumObserver.update,
    ContactDetector.update and tip_wrench, sample by sample, on update's own p, C^T qd, g
    and the bundle's J: every residual bit-identical; the same events, dt, contact state,
    isolated joint and detection time; ||r|| to 1e-15 relative; F and the damped flag as
    test_wrench_solver_equals_tip_wrench bounds them. A NaN effort is refused by both and
    changes nothing (residual, contact state, F); zeroing and a reset in between."""
    t, q, qd, tau = stream(panda, kind, seed=11 + len(kind) + len(kw))
    P, CT, G = reference_terms(panda, q, qd)
    gains = [40.0, 45, 50, 55, 60, 65, 70]
    enter = np.linspace(1.5, 4.0, 7)
    ref, new = (MomentumObserver(panda, gains=gains, max_dt=0.05, **kw) for _ in range(2))
    ref_det, new_det = ContactDetector(panda, enter), ContactDetector(panda, enter)
    solver, eps = WrenchSolver(0.01), 0.01
    seen = set()
    for k in range(len(t)):
        if k == 100:
            ref.zero(), new.zero()
        if k == 250:
            ref.reset(clear_bias=True), new.reset(clear_bias=True)
        J = panda.compute_all(q[k], qd[k], panda.default_tip).J
        try:
            step = ref.update(t[k], q[k], qd[k], tau[k])
        except InputError:
            before = (new.residual_buffer.copy(), new_det.in_contact, solver.F.copy())
            with pytest.raises(InputError):
                observe_contact(new, new_det, solver, t[k], P[k], CT[k], G[k], tau[k], qd[k], J)
            assert new.time == ref.time and new_det.in_contact == before[1]
            np.testing.assert_array_equal(new.residual_buffer, before[0])
            np.testing.assert_array_equal(solver.F, before[2])
            continue
        contact = ref_det.update(t[k], step.residual)
        wrench = tip_wrench(panda, q[k], step.residual, panda.default_tip, threshold=eps)
        event, dt, code, joint, damped = observe_contact(new, new_det, solver, t[k], P[k],
                                                         CT[k], G[k], tau[k], qd[k], J)
        np.testing.assert_array_equal(new.residual_buffer, step.residual)
        assert event == step.event and (dt == step.dt or math.isnan(dt) and math.isnan(step.dt))
        assert (new_det.in_contact, joint, ("", "enter", "leave")[code]) == (
            contact.in_contact, contact.joint, contact.event)
        assert new_det.detection_time == contact.detection_time or (
            math.isnan(new_det.detection_time) and math.isnan(contact.detection_time))
        assert abs(new_det.residual_norm - contact.residual_norm) <= 1e-15 * contact.residual_norm
        gain = 1.0 / min(wrench.sigma.min(), eps)
        cond = wrench.sigma.max() * gain
        assert damped == bool(wrench.damped)
        assert (np.abs(solver.F - wrench.F).max()
                <= 1e-15 * cond ** 2 * np.linalg.norm(step.residual) * gain)
        seen.add((event, contact.event))
    assert ref.gaps == new.gaps == 3
    assert {"start", "step"} <= {e for e, _ in seen} and {"enter", "leave"} <= {c for _, c in seen}
