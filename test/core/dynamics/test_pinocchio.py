"""The core against Pinocchio on real URDFs (example-robot-data) and on generated trees.

Pinocchio is the independent reference. Its model is always built WITHOUT mimic
(every URDF joint its own coordinate); ``PinocchioReference`` then applies the mimic
constraint itself exactly as design.md defines it (``q_full = G q + offset``,
``tau = G^T tau_full``, ``M = G^T M_full G``), maps coordinates by joint NAME (never by
position), turns a continuous joint's angle into Pinocchio's (cos, sin) pair, and reads
link frames as Pinocchio BODY frames. Gravity is Pinocchio's default (0, 0, -9.81), the
same as ours. Every comparison is at 1e-10, relative to max(1, |reference|).
"""
from __future__ import annotations

import math
import os

import numpy as np
import pinocchio as pin
import pytest

from .. import urdf_factory as uf

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ERD = os.path.join(os.path.dirname(pin.__file__), *[os.pardir] * 4,
                   "share", "example-robot-data", "robots")
ERD = os.path.normpath(ERD)
PANDA = os.path.join(ERD, "panda_description", "urdf", "panda.urdf")
UR5 = os.path.join(ERD, "ur_description", "urdf", "ur5_robot.urdf")
DOUBLE_PENDULUM = os.path.join(ERD, "double_pendulum_description", "urdf", "double_pendulum.urdf")

TOL = 1e-10
N_STATES = 12


def assert_close(actual, expected, tol=TOL, what=""):
    """max |actual - expected| <= tol * max(1, max |expected|)."""
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    err = float(np.max(np.abs(actual - expected))) if expected.size else 0.0
    assert err <= tol * scale, f"{what}: max error {err:.3e} > {tol:.0e} * {scale:.3g}"
    return err / scale


def symmetrize_upper(M):
    """Pinocchio's CRBA fills the upper triangle only."""
    return np.triu(M) + np.triu(M, 1).T


class PinocchioReference:
    """Pinocchio evaluated in OUR coordinates (design.md order and mimic convention)."""

    def __init__(self, xml, gravity=(0.0, 0.0, -9.81)):
        self.xml = xml
        self.model = pin.buildModelFromXML(xml)  # mimic=False: every joint a coordinate
        self.model.gravity.linear = np.asarray(gravity, dtype=float)
        self.data = self.model.createData()
        self.names = uf.dfs_coordinates(xml)
        self.n = len(self.names)
        joints = uf.urdf_joints(xml)
        col = {name: k for k, name in enumerate(self.names)}
        m = self.model
        self.G = np.zeros((m.nv, self.n))
        self.offset = np.zeros(m.nv)       # q_full = G q + offset (per velocity index)
        self.slots = []                    # (idx_q, nq, idx_v) per Pinocchio joint
        for jid in range(1, m.njoints):
            jm = m.joints[jid]
            name = m.names[jid]
            mimic = joints[name]["mimic"]
            if mimic is None:
                self.G[jm.idx_v, col[name]] = 1.0
            else:
                master, mult, off = mimic
                while joints[master]["mimic"] is not None:     # a mimic of a mimic
                    master, m2, o2 = joints[master]["mimic"]
                    mult, off = mult * m2, mult * o2 + off
                self.G[jm.idx_v, col[master]] = mult
                self.offset[jm.idx_v] = off
            self.slots.append((jm.idx_q, jm.nq, jm.idx_v))
        lo, hi = np.full(self.n, -math.pi), np.full(self.n, math.pi)
        for k, name in enumerate(self.names):
            jm = m.joints[m.getJointId(name)]
            if jm.nq == 1 and m.lowerPositionLimit[jm.idx_q] < m.upperPositionLimit[jm.idx_q]:
                lo[k] = max(lo[k], m.lowerPositionLimit[jm.idx_q])
                hi[k] = min(hi[k], m.upperPositionLimit[jm.idx_q])
        self.lower, self.upper = lo, hi

    # ---- coordinates
    def q_full(self, q):
        angles = self.G @ np.asarray(q, float) + self.offset
        out = np.zeros(self.model.nq)
        for idx_q, nq, idx_v in self.slots:
            if nq == 2:  # continuous joint: (cos, sin)
                out[idx_q], out[idx_q + 1] = math.cos(angles[idx_v]), math.sin(angles[idx_v])
            else:
                out[idx_q] = angles[idx_v]
        return out

    def states(self, count, seed):
        rng = np.random.default_rng(seed)
        q = rng.uniform(self.lower, self.upper, (count, self.n))
        qd = rng.normal(0.0, 1.0, (count, self.n))
        qdd = rng.normal(0.0, 2.0, (count, self.n))
        return q, qd, qdd

    def frame_id(self, frame):
        return self.model.getFrameId(frame, pin.BODY)

    # ---- joint-space terms
    def rnea(self, q, qd, qdd):
        G = self.G
        return G.T @ pin.rnea(self.model, self.data, self.q_full(q), G @ qd, G @ qdd)

    def gravity(self, q):
        return self.G.T @ pin.computeGeneralizedGravity(self.model, self.data, self.q_full(q))

    def coriolis(self, q, qd):
        return self.rnea(q, qd, np.zeros(self.n)) - self.gravity(q)

    def mass_matrix(self, q):
        M = symmetrize_upper(pin.crba(self.model, self.data, self.q_full(q)))
        return self.G.T @ M @ self.G

    def coriolis_matrix(self, q, qd):
        """Pinocchio's C (satisfies dM/dt = C + C^T), reduced by the constant G."""
        C = pin.computeCoriolisMatrix(self.model, self.data, self.q_full(q), self.G @ qd)
        return self.G.T @ C @ self.G

    def mass_matrix_rate(self, q, qd):
        C = self.coriolis_matrix(q, qd)
        return C + C.T

    def forward(self, q, qd, tau):
        return np.linalg.solve(self.mass_matrix(q), tau - self.rnea(q, qd, np.zeros(self.n)))

    # ---- frames
    def pose(self, q, frame):
        pin.framesForwardKinematics(self.model, self.data, self.q_full(q))
        return self.data.oMf[self.frame_id(frame)].homogeneous.copy()

    def jacobian(self, q, frame):
        J = pin.computeFrameJacobian(self.model, self.data, self.q_full(q), self.frame_id(frame),
                                     pin.LOCAL_WORLD_ALIGNED)
        return J @ self.G

    def classical_bias(self, q, qd, frame):
        """d/dt (J qd) at qdd = 0: classical acceleration of the frame origin + angular."""
        pin.forwardKinematics(self.model, self.data, self.q_full(q), self.G @ qd,
                              np.zeros(self.model.nv))
        return pin.getFrameClassicalAcceleration(self.model, self.data, self.frame_id(frame),
                                                 pin.LOCAL_WORLD_ALIGNED).vector.copy()

    def spatial_bias(self, q, qd, frame):
        pin.forwardKinematics(self.model, self.data, self.q_full(q), self.G @ qd,
                              np.zeros(self.model.nv))
        return pin.getFrameAcceleration(self.model, self.data, self.frame_id(frame),
                                        pin.LOCAL_WORLD_ALIGNED).vector.copy()

    def inverse_effective_inertia(self, q, frame, linear_only=False):
        J = self.jacobian(q, frame)
        if linear_only:
            J = J[:3]
        return J @ np.linalg.solve(self.mass_matrix(q), J.T)

    def operational_space(self, q, qd, frame, linear_only=False):
        J = self.jacobian(q, frame)
        a = self.classical_bias(q, qd, frame)
        if linear_only:
            J, a = J[:3], a[:3]
        M = self.mass_matrix(q)
        Lam = np.linalg.inv(J @ np.linalg.solve(M, J.T))
        mu = Lam @ (J @ np.linalg.solve(M, self.coriolis(q, qd)) - a)
        p = Lam @ J @ np.linalg.solve(M, self.gravity(q))
        return Lam, mu, p

    def kinetic_energy(self, q, qd):
        return pin.computeKineticEnergy(self.model, self.data, self.q_full(q), self.G @ qd)

    def potential_energy(self, q):
        return pin.computePotentialEnergy(self.model, self.data, self.q_full(q))


def _read(path):
    with open(path) as f:
        return f.read()


# name -> (URDF text, frames to check, frames where 6x6 J M^-1 J^T is invertible)
ROBOTS = {
    "panda": (lambda: _read(PANDA),
              ["panda_hand_tcp", "panda_link5", "panda_rightfinger"], ["panda_hand_tcp"]),
    "ur5": (lambda: _read(UR5), ["tool0", "forearm_link"], ["tool0"]),
    "double_pendulum": (lambda: _read(DOUBLE_PENDULUM), ["link2", "link1"], []),
    "tree_mimic": (lambda: uf.random_tree(1), ["tool_a", "tool_b", "la3"], []),
    "tree": (lambda: uf.random_tree(2, with_mimic=False), ["tool_a", "tool_b", "lb2"], []),
}


@pytest.fixture(scope="module", params=list(ROBOTS))
def robot(request):
    from manip_dynamics import RobotModel

    xml, frames, full_rank = ROBOTS[request.param]
    text = xml()
    model = RobotModel.from_urdf_string(text)
    return request.param, model, PinocchioReference(text), frames, full_rank


def test_pinocchio_files_exist():
    for path in (PANDA, UR5, DOUBLE_PENDULUM):
        assert os.path.isfile(path), path


def test_reference_mimic_reduction_matches_pinocchio_mimic_model():
    """Our G-reduction of the 9-joint Panda equals Pinocchio's own mimic model (nq = 8):
    two independent implementations of the constraint agree, so the reference is sound."""
    ref = PinocchioReference(_read(PANDA))
    mim = pin.buildModelFromUrdf(PANDA, mimic=True)
    data = mim.createData()
    assert (mim.nq, mim.nv, ref.n) == (8, 8, 8)
    order = [mim.names[j] for j in range(1, mim.njoints) if mim.joints[j].nv == 1]
    assert order == ref.names
    q, qd, qdd = ref.states(5, seed=3)
    for k in range(5):
        M = symmetrize_upper(pin.crba(mim, data, q[k]))
        assert_close(M, ref.mass_matrix(q[k]), what="M")
        assert_close(pin.rnea(mim, data, q[k], qd[k], qdd[k]), ref.rnea(q[k], qd[k], qdd[k]),
                     what="rnea")


def test_reference_coriolis_matrix_is_mass_matrix_rate():
    """Reference sanity: Pinocchio's C + C^T equals a central difference of its M along qd."""
    ref = PinocchioReference(uf.random_tree(1))
    q, qd, _ = ref.states(3, seed=4)
    h = 1e-6
    for k in range(3):
        fd = (ref.mass_matrix(q[k] + h * qd[k]) - ref.mass_matrix(q[k] - h * qd[k])) / (2 * h)
        assert_close(ref.mass_matrix_rate(q[k], qd[k]), fd, tol=1e-7, what="dM/dt")


def test_coordinates_are_urdf_depth_first(robot):
    name, model, ref, _, _ = robot
    assert tuple(model.joint_names) == tuple(ref.names)
    assert model.n == ref.n


def test_joint_space_terms(robot):
    name, model, ref, _, _ = robot
    q, qd, qdd = ref.states(N_STATES, seed=10)
    for k in range(N_STATES):
        assert_close(model.gravity_torques(q[k]), ref.gravity(q[k]), what="g")
        assert_close(model.coriolis_torques(q[k], qd[k]), ref.coriolis(q[k], qd[k]), what="C qd")
        M = model.mass_matrix(q[k])
        assert_close(M, ref.mass_matrix(q[k]), what="M")
        assert_close(M, M.T, tol=1e-14, what="M symmetric")


def test_coriolis_matrix(robot):
    """C qd equals the Coriolis torques and C + C^T equals dM/dt (from Pinocchio's C)."""
    name, model, ref, _, _ = robot
    q, qd, _ = ref.states(N_STATES, seed=11)
    for k in range(N_STATES):
        C = model.coriolis_matrix(q[k], qd[k])
        assert_close(C @ qd[k], ref.coriolis(q[k], qd[k]), what="C qd")
        assert_close(C + C.T, ref.mass_matrix_rate(q[k], qd[k]), what="C + C^T = dM/dt")


def test_momentum_terms(robot):
    """p = M qd and C^T qd of the O(n) recursion (one state, a batch, and compute_all's
    momentum=True run) against Pinocchio's M and C^T (computeCoriolisMatrix, transposed);
    mimic trees included (G^T C_full^T G qd)."""
    name, model, ref, frames, _ = robot
    q, qd, _ = ref.states(N_STATES, seed=12)
    batch = model.momentum_terms(q, qd)
    for k in range(N_STATES):
        p_ref = ref.mass_matrix(q[k]) @ qd[k]
        ct_ref = ref.coriolis_matrix(q[k], qd[k]).T @ qd[k]
        one = model.momentum_terms(q[k], qd[k])
        terms, fused = model.compute_all(q[k], qd[k], frames[0], momentum=True)
        for got in (one, fused, (batch.p[k], batch.ct[k])):
            assert_close(got[0], p_ref, what="p = M qd")
            assert_close(got[1], ct_ref, what="C^T qd")
        np.testing.assert_array_equal(fused.p, one.p)
        np.testing.assert_array_equal(fused.ct, one.ct)
        np.testing.assert_array_equal(terms.g, model.gravity_torques(q[k]))


def test_inverse_and_forward_dynamics(robot):
    name, model, ref, _, _ = robot
    q, qd, qdd = ref.states(N_STATES, seed=12)
    for k in range(N_STATES):
        tau = ref.rnea(q[k], qd[k], qdd[k])
        assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k]), tau, what="tau")
        assert_close(model.forward_dynamics(q[k], qd[k], tau), qdd[k], tol=1e-9, what="qdd")
        tau2 = tau + np.linspace(-3, 3, ref.n)
        assert_close(model.forward_dynamics(q[k], qd[k], tau2), ref.forward(q[k], qd[k], tau2),
                     tol=1e-9, what="forward dynamics")


def test_external_wrench_and_friction(robot):
    """tau = M qdd + C qd + g + tau_fr - J^T F_ext (design.md; seed 003 Q = tau + J^T F - f_r)."""
    name, model, ref, frames, _ = robot
    rng = np.random.default_rng(13)
    viscous = rng.uniform(0.1, 2.0, ref.n)
    coulomb = rng.uniform(0.1, 1.0, ref.n)
    fmodel = model.with_friction(viscous=viscous, coulomb=coulomb)
    q, qd, qdd = ref.states(6, seed=13)
    for k in range(6):
        F = rng.normal(0.0, 5.0, 6)
        J = ref.jacobian(q[k], frames[0])
        tau = ref.rnea(q[k], qd[k], qdd[k]) + viscous * qd[k] + coulomb * np.sign(qd[k]) - J.T @ F
        got = fmodel.inverse_dynamics(q[k], qd[k], qdd[k], friction=True, f_ext=F,
                                      f_ext_frame=frames[0])
        assert_close(got, tau, what="tau with friction and wrench")
        back = fmodel.forward_dynamics(q[k], qd[k], tau, friction=True, f_ext=F,
                                       f_ext_frame=frames[0])
        assert_close(back, qdd[k], tol=1e-9, what="qdd with friction and wrench")


def test_frame_kinematics(robot):
    """Pose, Jacobian (LOCAL_WORLD_ALIGNED, rows [v; w]) and Jdot qd, which is the time
    derivative of J qd: Pinocchio's CLASSICAL acceleration at qdd = 0, not its spatial one."""
    name, model, ref, frames, _ = robot
    q, qd, _ = ref.states(N_STATES, seed=14)
    for frame in frames:
        for k in range(N_STATES):
            assert_close(model.frame_pose(q[k], frame), ref.pose(q[k], frame), what="pose")
            assert_close(model.jacobian(q[k], frame), ref.jacobian(q[k], frame), what="J")
            bias = model.frame_bias_acceleration(q[k], qd[k], frame)
            assert_close(bias, ref.classical_bias(q[k], qd[k], frame), what="Jdot qd")


def test_bias_acceleration_is_not_the_spatial_one():
    """Guard on the reference choice above: for a moving arm the spatial and classical
    accelerations of the tool differ (by w x v), so the test above can tell them apart."""
    ref = PinocchioReference(_read(PANDA))
    q, qd, _ = ref.states(1, seed=15)
    diff = ref.classical_bias(q[0], qd[0], "panda_hand_tcp") - ref.spatial_bias(
        q[0], qd[0], "panda_hand_tcp")
    assert np.max(np.abs(diff[:3])) > 1e-2
    assert np.max(np.abs(diff[3:])) < 1e-12


def test_effective_inertia(robot):
    name, model, ref, frames, full_rank = robot
    q, qd, _ = ref.states(N_STATES, seed=16)
    for k in range(N_STATES):
        for frame in frames:
            for lin in (False, True):
                A = model.inverse_effective_inertia(q[k], frame, linear_only=lin)
                assert_close(A, ref.inverse_effective_inertia(q[k], frame, lin), what="A")
        for frame in full_rank:
            A = ref.inverse_effective_inertia(q[k], frame)
            cond = np.linalg.cond(A)
            Lam_ref, mu_ref, p_ref = ref.operational_space(q[k], qd[k], frame)
            # Lambda = A^-1 carries the conditioning of A
            tol = TOL * max(1.0, cond / 1e3)
            assert_close(model.effective_inertia(q[k], frame), Lam_ref, tol=tol, what="Lambda")
            Lam, mu, p = model.operational_space(q[k], qd[k], frame)
            assert_close(Lam, Lam_ref, tol=tol, what="Lambda (operational_space)")
            assert_close(mu, mu_ref, tol=tol, what="mu")
            assert_close(p, p_ref, tol=tol, what="p")
            u = np.array([1.0, -2.0, 0.5, 0.3, 0.0, -1.0])
            u /= np.linalg.norm(u)
            assert_close(model.effective_mass(q[k], frame, u), 1.0 / (u @ A @ u), tol=tol,
                         what="effective mass")


def test_effective_inertia_singular_arm_raises():
    """The double pendulum moves in a plane: J M^-1 J^T (6x6 and 3x3) has rank 2, so the
    undamped Lambda does not exist and the core must say so; damped it is finite."""
    from manip_dynamics import RobotModel
    from manip_dynamics.core.errors import SingularConfigurationError

    model = RobotModel.from_urdf_file(DOUBLE_PENDULUM)
    ref = PinocchioReference(_read(DOUBLE_PENDULUM))
    q, _, _ = ref.states(3, seed=17)
    for k in range(3):
        for lin in (False, True):
            with pytest.raises(SingularConfigurationError):
                model.effective_inertia(q[k], "link2", linear_only=lin)
            A = ref.inverse_effective_inertia(q[k], "link2", lin)
            s, V = np.linalg.eigh(A)
            d = 0.1
            damped = V @ np.diag(s / (s * s + d * d)) @ V.T
            assert_close(model.effective_inertia(q[k], "link2", linear_only=lin, damping=d),
                         damped, what="damped Lambda")


def test_energies(robot):
    name, model, ref, _, _ = robot
    q, qd, _ = ref.states(N_STATES, seed=18)
    for k in range(N_STATES):
        assert_close(model.kinetic_energy(q[k], qd[k]), ref.kinetic_energy(q[k], qd[k]), what="T")
        assert_close(model.potential_energy(q[k]), ref.potential_energy(q[k]), what="U")


def test_compute_all_bundle(robot):
    name, model, ref, frames, full_rank = robot
    q, qd, _ = ref.states(3, seed=19)
    frame = frames[0]
    for k in range(3):
        terms = model.compute_all(q[k], qd[k], frame, damping=0.0 if full_rank else 0.05)
        assert_close(terms.g, ref.gravity(q[k]), what="g")
        assert_close(terms.c, ref.coriolis(q[k], qd[k]), what="c")
        assert_close(terms.M, ref.mass_matrix(q[k]), what="M")
        assert_close(terms.J, ref.jacobian(q[k], frame), what="J")
        A = ref.inverse_effective_inertia(q[k], frame)
        assert_close(terms.A, A, what="A")
        assert bool(terms.singular) == (not full_rank)
        s, V = np.linalg.eigh(A)
        if full_rank:
            assert_close(terms.condition_number, np.linalg.cond(A), tol=1e-6, what="cond")
            tol = TOL * max(1.0, np.linalg.cond(A) / 1e3)
            assert_close(terms.Lambda, np.linalg.inv(A), tol=tol, what="Lambda")
        else:  # rank-deficient A: the condition number is beyond the 1e12 threshold
            assert terms.condition_number > 1e12
            assert_close(terms.Lambda, V @ np.diag(s / (s * s + 0.05 ** 2)) @ V.T,
                         what="damped Lambda")
            # undamped: never raises, Lambda is the pseudo-inverse (cut at 1e-12 max eig)
            inv_s = np.where(s > 1e-12 * s.max(), 1.0 / np.where(s > 0, s, 1), 0.0)
            pinv = V @ np.diag(inv_s) @ V.T
            undamped = model.compute_all(q[k], qd[k], frame)
            assert bool(undamped.singular)
            assert_close(undamped.Lambda, pinv, tol=1e-8, what="pseudo-inverse Lambda")


def test_batches_equal_per_state_results(robot):
    """design.md: every function taking q (n,) also takes (N, n), stacked on a new axis."""
    name, model, ref, frames, full_rank = robot
    q, qd, qdd = ref.states(5, seed=20)
    tau = np.array([ref.rnea(q[k], qd[k], qdd[k]) for k in range(5)])
    frame = frames[0]
    calls = {
        "gravity_torques": (lambda x: model.gravity_torques(x[0]), (q,)),
        "coriolis_torques": (lambda x: model.coriolis_torques(x[0], x[1]), (q, qd)),
        "coriolis_matrix": (lambda x: model.coriolis_matrix(x[0], x[1]), (q, qd)),
        "mass_matrix": (lambda x: model.mass_matrix(x[0]), (q,)),
        "inverse_dynamics": (lambda x: model.inverse_dynamics(x[0], x[1], x[2]), (q, qd, qdd)),
        "forward_dynamics": (lambda x: model.forward_dynamics(x[0], x[1], x[2]), (q, qd, tau)),
        "frame_pose": (lambda x: model.frame_pose(x[0], frame), (q,)),
        "jacobian": (lambda x: model.jacobian(x[0], frame), (q,)),
        "frame_bias_acceleration": (lambda x: model.frame_bias_acceleration(x[0], x[1], frame),
                                    (q, qd)),
        "inverse_effective_inertia": (lambda x: model.inverse_effective_inertia(x[0], frame),
                                      (q,)),
        "kinetic_energy": (lambda x: model.kinetic_energy(x[0], x[1]), (q, qd)),
        "potential_energy": (lambda x: model.potential_energy(x[0]), (q,)),
    }
    F = np.random.default_rng(21).normal(0.0, 5.0, (5, 6))
    calls["inverse_dynamics f_ext"] = (
        lambda x: model.inverse_dynamics(x[0], x[1], x[2], f_ext=x[3], f_ext_frame=frame),
        (q, qd, qdd, F))
    if full_rank:
        calls["effective_inertia"] = (lambda x: model.effective_inertia(x[0], frame), (q,))
    for label, (fn, args) in calls.items():
        batch = np.asarray(fn(args))
        single = np.array([np.asarray(fn(tuple(a[k] for a in args))) for k in range(5)])
        assert batch.shape == single.shape, f"{label}: {batch.shape} != {single.shape}"
        assert_close(batch, single, tol=1e-12, what=f"batch {label}")
