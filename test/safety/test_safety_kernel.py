"""The monitored points' numba pass (manip_dynamics.safety.kernel) against two independent
references, on random states of the Panda, UR5 and a branching tree with a mimic joint,
points with offsets included:

* the numpy path the package used before the kernel (``numpy_reference`` below): per
  monitored link the core's public ``jacobian``, ``frame_pose`` and
  ``inverse_effective_inertia`` (the bundle), then A_p = T A T^T and v = T J qd with
  T = [I, -[r]x], and numpy's ``eigh`` for a point at rest;
* Pinocchio: a frame at each point, its LOCAL_WORLD_ALIGNED Jacobian, ``crba``,
  J_p M^-1 J_p^T.

Also: the at-rest direction (smallest_eigenvector) against numpy's eigh on simple,
double and zero eigenvalues, the speed limits against ``permissible_speed``, and bad input.
The direct kernel calls are checked (argument types against the compiled entry point).
"""
import math
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "core"))
import urdf_factory as uf  # noqa: E402
from pin_points import pinocchio_with_points  # noqa: E402

from manip_dynamics import InputError, RobotModel  # noqa: E402
from manip_dynamics.core.dynamics import launch as core_launch  # noqa: E402
from manip_dynamics.core.errors import SingularConfigurationError  # noqa: E402
from manip_dynamics.core.dynamics.model import point_transform  # noqa: E402
from manip_dynamics.robots import path as robot_path  # noqa: E402
from manip_dynamics.safety import (BodyModel, MonitoredPoint, SafetyMonitor,  # noqa: E402
                                   default_points, permissible_speed)
from manip_dynamics.safety import kernel as K  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _checked_direct_calls():
    core_launch.check_direct_calls(True)
    yield
    core_launch.check_direct_calls(False)


def erd(robot):
    import pinocchio as pin
    return (pathlib.Path(pin.__file__).parents[4] / "share" / "example-robot-data" / "robots"
            / robot)


def numpy_reference(model, points, q, qd):
    """(position, velocity, A (P, 3, 3)) of every point, per link from the core's public
    calls (the pre-kernel numpy path)."""
    pos, vel, A = [], [], []
    for p in points:
        J = model.jacobian(q, p.link)
        X = model.frame_pose(q, p.link)
        A6 = model.inverse_effective_inertia(q, p.link)
        r = X[:3, :3] @ np.asarray(p.offset, dtype=float)
        T = point_transform(r)[0]
        pos.append(X[:3, 3] + r)
        vel.append(T @ (J @ qd))
        A.append(T @ A6 @ T.T)
    return np.array(pos), np.array(vel), np.array(A)


def mass_along(A, u):
    """1 / (u^T A u), +inf where u^T A u <= 1e-12 trace(A) (the package's rule)."""
    uau = u @ A @ u
    return 1.0 / uau if uau > 1e-12 * np.trace(A) else math.inf


def check_against(A, pos, vel, motion, rest_tol=1e-9):
    """The kernel's motion against reference positions, velocities and A's."""
    np.testing.assert_allclose(motion.position, pos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(motion.velocity, vel, rtol=1e-12, atol=1e-12)
    speed = np.linalg.norm(vel, axis=1)
    np.testing.assert_allclose(motion.speed, speed, rtol=1e-12, atol=1e-13)
    for i, (Ai, v, s) in enumerate(zip(A, vel, speed)):
        u = motion.direction[i]
        if motion.speed[i] > 0:
            np.testing.assert_allclose(u, v / s, atol=1e-12)
            expect = mass_along(Ai, v / s)
        else:          # at rest: an eigenvector of A's smallest eigenvalue (eigh's)
            w, V = np.linalg.eigh(Ai)
            assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-14)
            assert np.linalg.norm(Ai @ u - w[0] * u) <= rest_tol * max(w[2], 1e-300)
            expect = mass_along(Ai, V[:, 0])
        got = motion.effective_mass[i]
        if math.isinf(expect):
            assert math.isinf(got), (i, got)
        else:
            assert got == pytest.approx(expect, rel=1e-9), i


def offset_points(model, rng, count):
    """Every default point plus ``count`` random points with offsets on moving links."""
    moving = [f for f in model.frame_names if model.frame_body(f)[0] >= 0]
    extra = [(moving[rng.integers(len(moving))], tuple(rng.uniform(-0.2, 0.2, 3)))
             for _ in range(count)]
    return default_points(model, extra=extra)


MODELS = {
    "panda": lambda: RobotModel.from_urdf_file(robot_path("panda")),
    "ur5": lambda: RobotModel.from_urdf_file(erd("ur_description/urdf/ur5_robot.urdf")),
    "tree_mimic": lambda: RobotModel.from_urdf_string(uf.random_tree(seed=4)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_kernel_equals_the_numpy_path(name):
    model = MODELS[name]()
    rng = np.random.default_rng(17)
    points = offset_points(model, rng, 4)
    kin = SafetyMonitor(model, points, BodyModel.load()["chest"]).kinematics
    for trial in range(12):
        q = rng.uniform(-2, 2, model.n)
        qd = rng.uniform(-1.5, 1.5, model.n)
        if trial % 4 == 3:
            qd[:] = 0.0                        # every point at rest
        elif trial % 4 == 2:
            qd[1:] = 0.0                       # only the first joint moves
        pos, vel, A = numpy_reference(model, points, q, qd)
        check_against(A, pos, vel, kin.motion(q, qd))


@pytest.mark.parametrize("name", ["ur5", "panda"])
def test_kernel_against_pinocchio(name):
    """Every default point and three with offsets of two arms: J_p M^-1 J_p^T, positions
    and velocities from Pinocchio (a frame per point), moving and at rest."""
    import pinocchio as pin
    path = robot_path("panda") if name == "panda" else erd("ur_description/urdf/ur5_robot.urdf")
    model = RobotModel.from_urdf_file(path)
    rng = np.random.default_rng(5)
    points = offset_points(model, rng, 3)
    ref = pinocchio_with_points(path, model, points)
    pm, data, q_order, v_order = ref.pm, ref.data, ref.q_order, ref.v_order
    kin = SafetyMonitor(model, points, BodyModel.load()["chest"]).kinematics
    for trial in range(8):
        q = rng.uniform(-2, 2, model.n)
        qd = rng.uniform(-1, 1, model.n) if trial % 2 else np.zeros(model.n)
        qp = np.zeros(pm.nq)
        qp[q_order] = q
        pin.computeJointJacobians(pm, data, qp)
        pin.updateFramePlacements(pm, data)
        M = pin.crba(pm, data, qp)
        M = (np.triu(M) + np.triu(M, 1).T)[np.ix_(v_order, v_order)]
        pos, vel, A = [], [], []
        for k in range(len(points)):
            fid = pm.getFrameId(f"probe{k}")
            Jp = pin.getFrameJacobian(pm, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            Jp = Jp[:3, v_order]
            pos.append(data.oMf[fid].translation)
            vel.append(Jp @ qd)
            A.append(Jp @ np.linalg.solve(M, Jp.T))
        check_against(np.array(A), np.array(pos), np.array(vel), kin.motion(q, qd),
                      rest_tol=1e-8)


def test_assess_speed_limits_against_permissible_speed():
    model = RobotModel.from_urdf_file(robot_path("panda"))
    rng = np.random.default_rng(9)
    region = BodyModel.load()["hands_fingers"]
    for area in (None, 0.5e-4):
        mon = SafetyMonitor(model, offset_points(model, rng, 2), region, contact_area=area)
        for _ in range(10):
            q, qd = rng.uniform(-2, 2, 7), rng.uniform(-2, 2, 7)
            qd[rng.integers(7)] = 0.0
            s = mon.assess(q, qd)
            v_max = permissible_speed(region, s.motion.effective_mass, area)
            np.testing.assert_allclose(s.v_max, v_max, rtol=1e-14)
            ratio = np.where(s.motion.speed > 0, s.motion.speed / v_max, 0.0)
            np.testing.assert_allclose(s.ratio, ratio, rtol=1e-14)
            assert s.worst == int(np.argmax(ratio))
            assert s.speed_scale == pytest.approx(min(1.0, 1.0 / ratio.max()), rel=1e-14)


def test_region_without_transient_contact_gives_zero_scale():
    """The face admits no transient contact (v_max = 0): every moving point's ratio is
    inf, the scale 0; points at rest keep ratio 0."""
    model = RobotModel.from_urdf_file(robot_path("panda"))
    mon = SafetyMonitor(model, default_points(model), BodyModel.load()["face"])
    s = mon.assess(np.full(7, 0.3), np.r_[0.5, np.zeros(6)])
    assert (s.v_max == 0).all() and s.speed_scale == 0.0
    assert np.isinf(s.ratio[s.motion.speed > 0]).all()
    assert (s.ratio[s.motion.speed == 0] == 0).all()


def random_rotation(rng):
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    return Q * np.sign(np.diag(R))


@pytest.mark.parametrize("eigenvalues", [(0.2, 1.5, 4.0), (1e-9, 2.0, 3.0), (0.0, 0.0, 2.5),
                                         (0.7, 0.7, 3.0), (0.0, 0.0, 0.0), (1.1, 1.1, 1.1),
                                         (0.0, 1.0, 1.0)])
def test_smallest_eigenvector(eigenvalues):
    """A unit eigenvector of the smallest eigenvalue (checked by A u = w0 u), its largest
    component positive; for a simple w0 the same line as numpy's eigh."""
    rng = np.random.default_rng(int(sum(eigenvalues) * 1000))
    for _ in range(20):
        Q = random_rotation(rng)
        A = Q @ np.diag(eigenvalues) @ Q.T
        A = 0.5 * (A + A.T)
        u = np.empty(3)
        K.smallest_eigenvector(A, u)
        w, V = np.linalg.eigh(A)
        assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-14)
        assert np.linalg.norm(A @ u - w[0] * u) <= 1e-12 * max(w[2], 1.0)
        assert u[np.argmax(np.abs(u))] > 0
        if w[1] - w[0] > 1e-3 * w[2]:
            assert abs(u @ V[:, 0]) == pytest.approx(1.0, abs=1e-12)


def massless_joint_xml():
    """A revolute joint whose child link has no mass: M is singular."""
    return uf.robot_xml("massless", [
        uf.link_xml("base"), uf.link_xml("a", uf.inertial_xml(1.0, (0.3, 0, 0))),
        uf.link_xml("b"),
        uf.joint_xml("j1", "revolute", "base", "a"),
        uf.joint_xml("j2", "revolute", "a", "b", xyz=(0.3, 0, 0))])


def test_bad_input():
    model = RobotModel.from_urdf_file(robot_path("panda"))
    mon = SafetyMonitor(model, default_points(model), BodyModel.load()["chest"])
    q = np.zeros(7)
    bad = q.copy()
    bad[3] = np.nan
    with pytest.raises(InputError, match=r"q\[3\] \(joint 'panda_joint4'\) is nan"):
        mon.assess(bad, q)
    with pytest.raises(InputError, match=r"qd\[6\] \(joint 'panda_joint7'\) is inf"):
        mon.assess(q, np.r_[q[:6], np.inf])
    with pytest.raises(InputError, match=r"must have shape \(7,\)"):
        mon.assess(q[:6], q[:6])
    with pytest.raises(InputError, match=r"table must be a C-contiguous float64 array"):
        mon.assess_into(q, q, np.empty((len(mon.points), K.COLUMNS - 1)))
    with pytest.raises(InputError, match=r"table must be"):
        mon.assess_into(q, q, np.empty((K.COLUMNS, len(mon.points))).T)
    with pytest.warns(Warning, match="move no mass"):
        massless = RobotModel.from_urdf_string(massless_joint_xml())
    mon = SafetyMonitor(massless, default_points(massless), BodyModel.load()["chest"])
    with pytest.raises(SingularConfigurationError, match="not positive definite"):
        mon.assess(np.zeros(2), np.ones(2))


def test_point_on_the_root_never_moves():
    """A user point on a link fixed to the root: at rest, m = inf, position from the URDF."""
    model = RobotModel.from_urdf_file(robot_path("panda"))
    mon = SafetyMonitor(model, [MonitoredPoint("panda_link0", (0.1, 0.0, 0.2), "base")],
                        BodyModel.load()["chest"])
    s = mon.assess(np.full(7, 0.4), np.ones(7))
    assert s.motion.speed[0] == 0.0 and s.motion.effective_mass[0] == math.inf
    np.testing.assert_allclose(s.motion.position[0], [0.1, 0.0, 0.2], atol=1e-15)


def _axis(pm, data, v_order, j):
    """(origin, unit axis) in root axes of our joint j from Pinocchio: its placement and
    the angular part of its own column in its LOCAL Jacobian (the URDF axis, exactly)."""
    import pinocchio as pin
    joint = [i for i, jm in enumerate(pm.joints) if jm.nv == 1 and jm.idx_v == v_order[j]][0]
    w = pin.getJointJacobian(pm, data, joint, pin.ReferenceFrame.LOCAL)[3:, v_order[j]]
    return data.oMi[joint].translation, data.oMi[joint].rotation @ w


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_point_on_the_only_moving_axis_is_at_rest(name):
    """One joint moves alone. A monitored point on its axis does not move: the kernel
    reports it at rest (speed 0, ratio 0) with the at-rest worst case m = 1 / lambda_min(A)
    of Pinocchio's A = J_p M^-1 J_p^T (its computed J_p qd is round-off, ~1e-17 m/s, and
    was taken for a direction: 1.07 kg on the Panda's flange where the worst case is
    7.9 kg); a point off the axis moves at (its distance) |qd_j| along the tangent."""
    import pinocchio as pin
    path = robot_path("panda") if name == "panda" else erd("ur_description/urdf/ur5_robot.urdf")
    model = RobotModel.from_urdf_file(path)
    points = default_points(model, extra=[(model.default_tip, (0.0, 0.0, 0.03))])
    ref = pinocchio_with_points(path, model, points)
    pm, data, q_order, v_order = ref.pm, ref.data, ref.q_order, ref.v_order
    hand = BodyModel.load()["hands_fingers"]
    mon = SafetyMonitor(model, points, hand)
    rng = np.random.default_rng(23)
    on_axis = 0
    for trial in range(6):
        q = rng.uniform(-2, 2, model.n)
        qp = np.zeros(pm.nq)
        qp[q_order] = q
        pin.computeJointJacobians(pm, data, qp)
        pin.updateFramePlacements(pm, data)
        M = pin.crba(pm, data, qp)
        M = (np.triu(M) + np.triu(M, 1).T)[np.ix_(v_order, v_order)]
        pos = np.array([data.oMf[pm.getFrameId(f"probe{k}")].translation
                        for k in range(len(points))])
        for j in range(model.n - 3, model.n):         # the wrist joints, one at a time
            qd = np.zeros(model.n)
            qd[j] = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0)
            s = mon.assess(q, qd)
            o, axis = _axis(pm, data, v_order, j)
            dist = np.linalg.norm(np.cross(pos - o, axis), axis=1)
            for k in range(len(points)):
                Jp = pin.getFrameJacobian(pm, data, pm.getFrameId(f"probe{k}"),
                                          pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3, v_order]
                A = Jp @ np.linalg.solve(M, Jp.T)
                moved = Jp[:, j].any()       # a point below joint j (else it cannot move)
                if moved and dist[k] < 1e-12:
                    on_axis += 1
                    assert s.motion.speed[k] == 0.0 and s.ratio[k] == 0.0, points[k].label
                    w = np.linalg.eigvalsh(A)
                    assert s.motion.effective_mass[k] == pytest.approx(1.0 / w[0], rel=1e-9)
                    assert s.v_max[k] == pytest.approx(permissible_speed(hand, 1.0 / w[0]),
                                                       rel=1e-12)
                elif moved and dist[k] > 1e-6:
                    assert s.motion.speed[k] == pytest.approx(dist[k] * abs(qd[j]), rel=1e-9,
                                                              abs=0)
                    tangent = np.cross(axis, pos[k] - o) * np.sign(qd[j])
                    np.testing.assert_allclose(s.motion.direction[k],
                                               tangent / np.linalg.norm(tangent), atol=1e-9)
    assert on_axis >= 6          # the Panda's flange and the tip's extra point; UR5's wrist


def test_slow_true_motion_above_the_round_off_bound_is_moving():
    """A point 1e-13 m .. 1e-12 m off the only moving joint's axis moves, slowly but truly:
    its speed exceeds the round-off bound of docs/safety.md, v_rest = 8 (d + 2) eps
    sum_j |qd_j| (|S_v,j| + |S_w,j| l) (written out here for the Panda's joint 7 alone:
    d = 7 joints above the flange, |S_w| = 1, |S_v| = |o_7 x a_7|, l the largest distance of
    the point and the link origins from the base), so it is assessed along its motion."""
    import pinocchio as pin
    path = robot_path("panda")
    model = RobotModel.from_urdf_file(path)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()
    q = np.array([0.3, -0.5, 0.2, -1.8, 0.4, 1.6, 0.7])
    pin.forwardKinematics(pm, data, q)
    o7 = data.oMi[7].translation
    a7 = data.oMi[7].rotation[:, 2]
    reach = max(np.linalg.norm(data.oMi[i].translation) for i in range(1, 8))
    qd7 = 1.5
    v_rest = 8 * (7 + 2) * np.finfo(float).eps * qd7 * (np.linalg.norm(np.cross(o7, a7))
                                                         + reach)
    assert 1e-15 < v_rest < 1e-13                  # the bound is round-off, not a speed
    qd = np.r_[np.zeros(6), qd7]
    for factor in (3.0, 30.0):
        delta = factor * v_rest / qd7          # off the axis along the link's x
        mon = SafetyMonitor(model, [MonitoredPoint("panda_link8", (0.0, 0.0, 0.0), "flange"),
                                    MonitoredPoint("panda_link8", (delta, 0.0, 0.0), "off")],
                            BodyModel.load()["face"])
        s = mon.assess(q, qd)
        assert s.motion.speed[0] == 0.0 and s.ratio[0] == 0.0      # on the axis: at rest
        assert s.motion.speed[1] == pytest.approx(delta * qd7, rel=0.2 / factor, abs=0)
        tangent = np.cross(a7, data.oMi[7].rotation[:, 0])   # a7 x (the offset's axis)
        np.testing.assert_allclose(s.motion.direction[1], tangent, atol=0.2 / factor)
        assert s.ratio[1] == math.inf and s.speed_scale == 0.0      # the face: stop


def test_wrist_only_motion_under_a_region_without_transient_contact():
    """Joint 7 of the Panda alone moves no monitored point (its origin and the flange lie on
    its axis; the other links sit above it): under the face, which permits no transient
    contact, nothing is too fast and the speed scale stays 1 (it was 0, 'stop')."""
    model = RobotModel.from_urdf_file(robot_path("panda"))
    mon = SafetyMonitor(model, default_points(model), BodyModel.load()["face"])
    rng = np.random.default_rng(31)
    for _ in range(10):
        s = mon.assess(rng.uniform(-2, 2, 7), np.r_[np.zeros(6), rng.uniform(-2.5, 2.5)])
        assert (s.motion.speed == 0).all() and (s.ratio == 0).all(), s.motion.speed
        assert s.speed_scale == 1.0
