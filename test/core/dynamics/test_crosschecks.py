"""Each core algorithm against a second, independent one (no stored expected values).

- forward_dynamics  vs  inverse_dynamics (round trip) and Pinocchio's ABA (friction and
  the external wrench moved to the right-hand side)
- coriolis_matrix   vs  finite differences of M (dM/dt = C + C^T; Christoffel symbols)
- gravity_torques   vs  finite differences of potential_energy (g = dU/dq)
- jacobian          vs  finite differences of frame_pose
- bias acceleration vs  finite differences of J, and kinetic energy vs 1/2 qd^T M qd
- f_ext             vs  -J^T F
- operational space vs  its defining formulas with numpy solves
"""
import re

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from manip_dynamics import RobotModel

from .test_model_api import chain3
from .test_pinocchio import PinocchioReference

# chain3 for Pinocchio: urdfdom requires a <limit> on revolute joints (limits change nothing here)
REF = PinocchioReference(re.sub(r'(type="revolute">.*?<axis xyz="[^"]*"/>)',
                                r'\1<limit effort="100" velocity="10"/>', chain3()),
                         gravity=(0.3, -1.0, -9.81))

H = 1e-6


@pytest.fixture(scope="module")
def arm():
    return RobotModel.from_urdf_string(chain3()).with_gravity([0.3, -1.0, -9.81])


@pytest.fixture(scope="module")
def states():
    rng = np.random.default_rng(11)
    return [rng.normal(size=(3, 3)) for _ in range(5)]


def test_forward_dynamics_inverts_inverse_dynamics(arm, states):
    for q, qd, tau in states:
        F = np.array([1.0, -2.0, 0.5, 0.1, 0.2, -0.3])
        qdd = arm.forward_dynamics(q, qd, tau, friction=True, f_ext=F, f_ext_frame="tool")
        back = arm.inverse_dynamics(q, qd, qdd, friction=True, f_ext=F, f_ext_frame="tool")
        np.testing.assert_allclose(back, tau, atol=1e-11)
        # Pinocchio's ABA (articulated bodies, no M): M qdd + h = tau - tau_fr + J^T F, with
        # chain3's <dynamics> on j3 (b = 0.7, f_c = 0.2) and Pinocchio's own J at "tool"
        tau_fr = np.array([0.0, 0.0, 0.7 * qd[2] + 0.2 * np.sign(qd[2])])
        rhs = tau - tau_fr + REF.jacobian(q, "tool").T @ F
        G = REF.G                           # our coordinates -> Pinocchio's (by name)
        qdd_aba = G.T @ pin.aba(REF.model, REF.data, REF.q_full(q), G @ qd, G @ rhs)
        np.testing.assert_allclose(qdd, qdd_aba, rtol=0,
                                   atol=1e-10 * max(1.0, np.abs(qdd_aba).max()))


def test_external_wrench_is_minus_jacobian_transpose(arm, states):
    for q, qd, qdd in states:
        F = np.array([0.4, 1.0, -2.0, 0.3, -0.1, 0.2])
        d = (arm.inverse_dynamics(q, qd, qdd, f_ext=F, f_ext_frame="l2")
             - arm.inverse_dynamics(q, qd, qdd))
        np.testing.assert_allclose(d, -arm.jacobian(q, "l2").T @ F, atol=1e-12)


def test_coriolis_matrix_is_christoffel(arm, states):
    for q, qd, _ in states:
        C = arm.coriolis_matrix(q, qd)
        np.testing.assert_allclose(C @ qd, arm.coriolis_torques(q, qd), atol=1e-12)
        dM = [(arm.mass_matrix(q + H * e) - arm.mass_matrix(q - H * e)) / (2 * H) for e in np.eye(3)]
        dM = np.array(dM)  # dM[k] = dM/dq_k
        Mdot = np.einsum("kij,k->ij", dM, qd)
        np.testing.assert_allclose(C + C.T, Mdot, atol=1e-8)
        christoffel = 0.5 * (Mdot + np.einsum("jik,k->ij", dM, qd) - np.einsum("ijk,k->ij", dM, qd))
        np.testing.assert_allclose(C, christoffel, atol=1e-8)


def test_gravity_is_gradient_of_potential_energy(arm, states):
    for q, _, _ in states:
        grad = [(arm.potential_energy(q + H * e) - arm.potential_energy(q - H * e)) / (2 * H)
                for e in np.eye(3)]
        np.testing.assert_allclose(arm.gravity_torques(q), grad, atol=1e-8)


def test_kinetic_energy_is_quadratic_form_of_mass_matrix(arm, states):
    for q, qd, _ in states:
        assert arm.kinetic_energy(q, qd) == pytest.approx(0.5 * qd @ arm.mass_matrix(q) @ qd,
                                                          rel=1e-13)


def test_jacobian_matches_pose_derivative(arm, states):
    for q, _, _ in states:
        for frame in ("l1", "l3", "tool"):
            J = arm.jacobian(q, frame)
            X = arm.frame_pose(q, frame)
            for k, e in enumerate(np.eye(3)):
                Xp, Xm = arm.frame_pose(q + H * e, frame), arm.frame_pose(q - H * e, frame)
                v = (Xp[:3, 3] - Xm[:3, 3]) / (2 * H)
                w = Rotation.from_matrix(Xp[:3, :3] @ Xm[:3, :3].T).as_rotvec() / (2 * H)
                np.testing.assert_allclose(J[:3, k], v, atol=1e-8)
                np.testing.assert_allclose(J[3:, k], w, atol=1e-8)
            assert np.allclose(X[3], [0, 0, 0, 1])


def test_bias_acceleration_is_jdot_qd(arm, states):
    for q, qd, _ in states:
        Jdot = (arm.jacobian(q + H * qd, "tool") - arm.jacobian(q - H * qd, "tool")) / (2 * H)
        np.testing.assert_allclose(arm.frame_bias_acceleration(q, qd, "tool"), Jdot @ qd, atol=1e-7)


def test_operational_space_terms_from_their_definitions(arm, states):
    for q, qd, _ in states:
        M, J = arm.mass_matrix(q), arm.jacobian(q, "tool")[:3]
        A = J @ np.linalg.solve(M, J.T)
        Lam, mu, p = arm.operational_space(q, qd, "tool", linear_only=True)
        np.testing.assert_allclose(Lam @ A, np.eye(3), atol=1e-9)
        jd = arm.frame_bias_acceleration(q, qd, "tool")[:3]
        c, g = arm.coriolis_torques(q, qd), arm.gravity_torques(q)
        np.testing.assert_allclose(mu, Lam @ (J @ np.linalg.solve(M, c) - jd), atol=1e-9)
        np.testing.assert_allclose(p, Lam @ J @ np.linalg.solve(M, g), atol=1e-9)
        t = arm.compute_all(q, qd, "tool", linear_only=True)
        np.testing.assert_allclose(t.A, A, atol=1e-12)
        np.testing.assert_allclose(t.Lambda, Lam, atol=1e-12)
        assert t.condition_number == pytest.approx(np.linalg.cond(A), rel=1e-8)
        # damped inverse: V diag(s / (s^2 + d^2)) V^T from numpy's eigh
        s, V = np.linalg.eigh(A)
        d = 0.05
        np.testing.assert_allclose(arm.effective_inertia(q, "tool", True, damping=d),
                                   V @ np.diag(s / (s * s + d * d)) @ V.T, atol=1e-10)
        u = np.array([0.3, -0.2, 0.9])
        u /= np.linalg.norm(u)
        assert arm.effective_mass(q, "tool", u) == pytest.approx(1 / (u @ A @ u), rel=1e-12)


def test_inertia_ellipsoid_is_eigen_decomposition_of_lambda(arm, states):
    for q, _, _ in states:
        ell = arm.inertia_ellipsoid(q, "tool")
        Lam = arm.effective_inertia(q, "tool", linear_only=True)
        np.testing.assert_allclose(ell.eigenvalues, np.linalg.eigvalsh(Lam), rtol=1e-9)
        V = ell.eigenvectors
        np.testing.assert_allclose(V @ np.diag(ell.eigenvalues) @ V.T, Lam, atol=1e-9 * np.abs(Lam).max())
        assert np.linalg.det(V) == pytest.approx(1.0, abs=1e-12)
        assert not ell.singular


def test_damping_applies_only_above_damping_condition(arm, states):
    """damping_condition: Lambda is numpy's inv(A) where cond(A) <= damping_condition and
    the damped inverse V diag(s / (s^2 + d^2)) V^T above it (A = J M^-1 J^T formed here
    with numpy from J and M); effective_inertia and compute_all agree."""
    d = 0.05
    seen = set()
    for q, qd, _ in states:
        J = arm.jacobian(q, "tool")[:3]
        A = J @ np.linalg.solve(arm.mass_matrix(q), J.T)
        s, V = np.linalg.eigh(A)
        cond = s[-1] / s[0]
        for dc in (0.0, cond * 0.5, cond * 2.0, np.inf):
            t = arm.compute_all(q, qd, "tool", linear_only=True, damping=d, damping_condition=dc)
            lam = arm.effective_inertia(q, "tool", True, damping=d, damping_condition=dc)
            np.testing.assert_allclose(lam, t.Lambda, rtol=1e-12, atol=1e-12)
            if cond > dc:
                seen.add("damped")
                np.testing.assert_allclose(t.Lambda, V @ np.diag(s / (s * s + d * d)) @ V.T,
                                           atol=1e-10)
            else:
                seen.add("exact")
                np.testing.assert_allclose(t.Lambda, np.linalg.inv(A), rtol=1e-9, atol=1e-10)
    assert seen == {"damped", "exact"}
    with pytest.raises(Exception, match="damping_condition"):
        arm.compute_all(states[0][0], states[0][1], "tool", damping=d, damping_condition=-1.0)
