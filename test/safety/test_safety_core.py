"""Collaborative safety core (manip_dynamics.safety): effective masses of points against
closed forms and Pinocchio, the ISO/TS 15066 speed limit against a hand computation, the
speed scale and retiming against their definitions, and bad input.

Closed forms (derived in docs/safety.md, "Closed forms"):
* one-link pendulum about z, body inertia I_O about the joint: a point at distance r on
  the link, pushed along the tangent, feels m_u = I_O / r^2; radially it cannot move (inf);
* stretched 2R arm with point masses (seed 001): the tip feels exactly m2 along the tangent
  (the elbow joint leaves the first link's mass behind), inf along the arm;
* RP arm (seed 000), M = diag(H1 + m1 |c1|^2 + H2 + m2 r^2, m2): at link 2's origin, m2
  along the prismatic axis, M11 / r^2 along the tangent.
"""
import math
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "core"))
import urdf_factory as uf  # noqa: E402

from manip_dynamics import InputError, RobotModel, UnknownFrameError  # noqa: E402
from manip_dynamics.robots import path as robot_path  # noqa: E402
from manip_dynamics.safety import (BodyModel, MonitoredPoint, SafetyMonitor,  # noqa: E402
                                   check_trajectory, default_points, permissible_speed,
                                   reduced_mass, simplified_robot_mass)


def pendulum_xml(m, L, izz):
    """One link on a revolute z joint; COM at (L, 0, 0), inertia izz about the COM."""
    I = np.diag([izz, izz, izz])
    return uf.robot_xml("pendulum", [
        uf.link_xml("base"),
        uf.link_xml("arm", uf.inertial_xml(m, (L, 0.0, 0.0), inertia=I)),
        uf.joint_xml("j", "revolute", "base", "arm")])


def test_pendulum_point_effective_mass_is_I_O_over_r_squared():
    m, L, izz = 2.0, 0.4, 0.03
    model = RobotModel.from_urdf_string(pendulum_xml(m, L, izz))
    I_O = izz + m * L ** 2
    for q in (0.0, 0.7, -2.1):
        for r in (0.1, 0.4, 0.9):
            tangent = [-math.sin(q), math.cos(q), 0.0]
            radial = [math.cos(q), math.sin(q), 0.0]
            m_t = model.effective_mass(np.array([q]), "arm", tangent, point=[r, 0.0, 0.0])
            assert m_t == pytest.approx(I_O / r ** 2, rel=1e-12)
            assert model.effective_mass(np.array([q]), "arm", radial, point=[r, 0, 0]) == np.inf
    # a monitored point moving at speed omega r is assessed along its own velocity
    kin = SafetyMonitor(model, [MonitoredPoint("arm", (0.5, 0.0, 0.0), "p")],
                        BodyModel.load()["chest"]).kinematics
    mo = kin.motion(np.array([0.3]), np.array([2.0]))
    assert mo.speed[0] == pytest.approx(1.0, rel=1e-14)
    assert mo.effective_mass[0] == pytest.approx(I_O / 0.25, rel=1e-12)
    np.testing.assert_allclose(mo.direction[0], [-math.sin(0.3), math.cos(0.3), 0], atol=1e-15)


def test_stretched_point_mass_2r_tip_feels_m2():
    m1, m2, l1, l2 = 3.0, 1.25, 0.6, 0.45
    model = RobotModel.from_urdf_string(uf.point_mass_2r(m1, m2, l1, l2))
    for q1 in (0.0, 0.8, 2.5):
        q = np.array([q1, 0.0])
        tangent = [-math.sin(q1), math.cos(q1), 0.0]
        along = [math.cos(q1), math.sin(q1), 0.0]
        assert model.effective_mass(q, "tip", tangent) == pytest.approx(m2, rel=1e-10)
        assert model.effective_mass(q, "tip", along) == np.inf


def test_bent_point_mass_2r_against_closed_form_J_and_M():
    """Any direction, bent arm: 1 / (u^T J M^-1 J^T u) with the seed's J and M written out."""
    m1, m2, l1, l2 = 3.0, 1.25, 0.6, 0.45
    model = RobotModel.from_urdf_string(uf.point_mass_2r(m1, m2, l1, l2))
    rng = np.random.default_rng(3)
    for _ in range(20):
        q1, q2 = rng.uniform(-3, 3, 2)
        s1, c1, s12, c12, c2 = (math.sin(q1), math.cos(q1), math.sin(q1 + q2),
                                math.cos(q1 + q2), math.cos(q2))
        J = np.array([[-l1 * s1 - l2 * s12, -l2 * s12], [l1 * c1 + l2 * c12, l2 * c12]])
        M = np.array([[m1 * l1 ** 2 + m2 * (l1 ** 2 + 2 * l1 * l2 * c2 + l2 ** 2),
                       m2 * (l1 * l2 * c2 + l2 ** 2)],
                      [m2 * (l1 * l2 * c2 + l2 ** 2), m2 * l2 ** 2]])
        a = rng.uniform(0, 2 * math.pi)
        u = np.array([math.cos(a), math.sin(a)])
        expect = 1.0 / (u @ J @ np.linalg.solve(M, J.T) @ u)
        got = model.effective_mass(np.array([q1, q2]), "tip", [u[0], u[1], 0.0])
        assert got == pytest.approx(expect, rel=1e-9)


def test_rp_arm_radial_and_tangential():
    m1, m2, c1, H1, H2 = 2.0, 0.7, (0.3, 0.05), 0.02, 0.004
    model = RobotModel.from_urdf_string(uf.rp_arm(m1, m2, c1, H1, H2))
    for th, r in ((0.0, 0.5), (1.1, 0.8), (-2.0, 0.3)):
        q = np.array([th, r])
        radial = [math.cos(th), math.sin(th), 0.0]
        tangent = [-math.sin(th), math.cos(th), 0.0]
        M11 = H1 + m1 * (c1[0] ** 2 + c1[1] ** 2) + H2 + m2 * r ** 2
        assert model.effective_mass(q, "link2", radial) == pytest.approx(m2, rel=1e-12)
        assert model.effective_mass(q, "link2", tangent) == pytest.approx(M11 / r ** 2, rel=1e-12)


@pytest.mark.parametrize("robot, link, offset", [
    ("ur_description/urdf/ur5_robot.urdf", "wrist_2_link", (0.02, -0.05, 0.08)),
    ("xarm_description/urdf/xarm7.urdf", "link5", (0.0, 0.06, -0.1)),
    ("z1_description/urdf/z1.urdf", "link04", (0.05, 0.0, 0.03)),
])
def test_point_effective_mass_against_pinocchio(robot, link, offset):
    import pinocchio as pin
    erd = pathlib.Path(pin.__file__).parents[4] / "share" / "example-robot-data" / "robots"
    path = erd / robot
    model = RobotModel.from_urdf_file(path)
    pm = pin.buildModelFromUrdf(str(path))
    parent = pm.frames[pm.getFrameId(link)]
    pm.addFrame(pin.Frame("probe", parent.parentJoint, parent.placement
                          * pin.SE3(np.eye(3), np.array(offset)), pin.FrameType.OP_FRAME))
    data = pm.createData()
    pk = PointKinematicsIndex(model, pm)
    rng = np.random.default_rng(7)
    mon = SafetyMonitor(model, [MonitoredPoint(link, offset, "probe")],
                        BodyModel.load()["hands_fingers"])
    for _ in range(10):
        q = rng.uniform(-2, 2, model.n)
        qd = rng.uniform(-1, 1, model.n)
        qp = pk.pin_q(q)
        pin.computeJointJacobians(pm, data, qp)
        pin.updateFramePlacements(pm, data)
        Jp = pin.getFrameJacobian(pm, data, pm.getFrameId("probe"),
                                  pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3, pk.v_order]
        M = pin.crba(pm, data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        M = M[np.ix_(pk.v_order, pk.v_order)]
        A = Jp @ np.linalg.solve(M, Jp.T)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        assert model.effective_mass(q, link, u, point=offset) == pytest.approx(
            1.0 / (u @ A @ u), rel=1e-9)
        mo = mon.kinematics.motion(q, qd)
        v = Jp @ qd
        np.testing.assert_allclose(mo.velocity[0], v, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mo.position[0], data.oMf[pm.getFrameId("probe")].translation,
                                   atol=1e-12)
        w = v / np.linalg.norm(v)
        assert mo.effective_mass[0] == pytest.approx(1.0 / (w @ A @ w), rel=1e-9)


class PointKinematicsIndex:
    """Our joint order -> Pinocchio's q and v (revolute/prismatic only here)."""

    def __init__(self, model, pm):
        names = list(pm.names)
        self.v_order = [pm.joints[names.index(j)].idx_v for j in model.joint_names]
        self.q_order = [pm.joints[names.index(j)].idx_q for j in model.joint_names]
        self.nq = pm.nq

    def pin_q(self, q):
        qp = np.zeros(self.nq)
        qp[self.q_order] = q
        return qp


def test_iso_hand_example_by_hand():
    """Hands and fingers (Table A.2/A.3: m_H 0.6 kg, k 75 N/mm, F_s 140 N, transient x2),
    m_R = 10 kg: mu = 1 / (1/0.6 + 1/10) = 6/10.6 = 0.56604 kg,
    v_max = 280 N / sqrt(0.56604 kg * 75000 N/m) = 280 / 206.041 = 1.35895 m/s."""
    hand = BodyModel.load()["hands_fingers"]
    assert reduced_mass(0.6, 10.0) == pytest.approx(6.0 / 10.6, rel=1e-15)
    assert permissible_speed(hand, 10.0) == pytest.approx(1.35895, abs=5e-6)
    # pressure form: back of the non-dominant hand 190 N/cm^2, transient 380 N/cm^2; on
    # 0.5 cm^2 that is 190 N < 280 N: v_max = 190 / 206.041 = 0.92215 m/s; on 1 cm^2 the
    # force limit (280 N < 380 N) governs again
    assert permissible_speed(hand, 10.0, contact_area=0.5e-4) == pytest.approx(0.92215, abs=5e-6)
    assert permissible_speed(hand, 10.0, contact_area=1e-4) == pytest.approx(1.35895, abs=5e-6)
    # the robot cannot move the point that way (m_R inf): mu = m_H, 280 / sqrt(0.6 * 75000)
    assert permissible_speed(hand, np.inf) == pytest.approx(280 / math.sqrt(45000), rel=1e-15)
    # skull and face: transient contact not permissible
    assert permissible_speed(BodyModel.load()["face"], 10.0) == 0.0


def test_packaged_table_values():
    """Spot values of the packaged table, in SI (Tables A.2, A.3)."""
    bm = BodyModel.load()
    assert len(bm.keys()) == 12
    chest = bm["chest"]
    assert (chest.effective_mass, chest.spring_constant, chest.force) == (40.0, 25e3, 140.0)
    assert chest.pressure() == 2 * 120e4 and chest.pressure(transient=False) == 120e4
    assert sum(len(bm[k].areas) for k in bm.keys()) == 29


def test_simplified_mass_is_half_the_moving_mass_plus_payload():
    m1, m2 = 3.0, 1.25
    model = RobotModel.from_urdf_string(uf.point_mass_2r(m1, m2, 0.6, 0.45))
    assert simplified_robot_mass(model) == pytest.approx((m1 + m2) / 2, rel=1e-15)
    loaded = model.with_payload("tip", 0.8)
    assert simplified_robot_mass(loaded) == pytest.approx((m1 + m2) / 2 + 0.8, rel=1e-15)
    assert simplified_robot_mass(model, payload_mass=2.0) == pytest.approx((m1 + m2) / 2 + 2)


def test_speed_scale_and_retiming():
    model = RobotModel.from_urdf_file(robot_path("panda"))
    mon = SafetyMonitor(model, default_points(model), BodyModel.load()["hands_fingers"])
    rng = np.random.default_rng(11)
    K = 12
    P = np.linspace(np.zeros(7), rng.uniform(-1, 1, 7), K)
    V = rng.uniform(-2.5, 2.5, (K, 7))
    t = np.linspace(0, 2, K)
    Aacc = rng.uniform(-3, 3, (K, 7))
    chk = check_trajectory(mon, P, V, t, Aacc)
    assert chk.scale > 1                      # these velocities are too fast for a hand
    for k in range(K):
        s = mon.assess(P[k], V[k])
        assert chk.ratio[k] == s.ratio.max() and chk.worst[k] == s.worst
        # the point's ratio is its speed over the limit from its own effective mass
        i = s.worst
        assert s.ratio[i] == pytest.approx(
            s.motion.speed[i] / permissible_speed(mon.region, s.motion.effective_mass[i]))
        # speed_scale: the largest uniform factor within every limit
        fast = mon.assess(P[k], V[k] * s.speed_scale)
        assert fast.ratio.max() <= 1 + 1e-12
        if s.speed_scale < 1:
            assert fast.ratio.max() == pytest.approx(1.0, rel=1e-12)
        retimed = mon.assess(P[k], chk.velocities[k])
        assert retimed.ratio.max() <= 1 + 1e-12
    np.testing.assert_allclose(chk.time_from_start, t * chk.scale)
    np.testing.assert_allclose(chk.accelerations, Aacc / chk.scale ** 2)
    assert max(mon.assess(P[k], chk.velocities[k]).ratio.max() for k in range(K)) == \
        pytest.approx(1.0, rel=1e-12)


def test_default_points_cover_moving_links_and_tip():
    model = RobotModel.from_urdf_file(robot_path("panda"))
    pts = default_points(model, extra=[("panda_link7", (0, 0, 0.2))])
    labels = [p.label for p in pts]
    assert "panda_link0" not in labels                    # fixed to the root: never moves
    assert labels[:8] == [f"panda_link{i}" for i in range(1, 9)]
    assert pts[-1].link == "panda_link7" and pts[-1].offset == (0.0, 0.0, 0.2)


@pytest.mark.parametrize("call, match", [
    (lambda m: m.effective_mass(np.zeros(7), "nope", [1, 0, 0]), "unknown frame 'nope'"),
    (lambda m: m.effective_mass(np.zeros(7), "panda_link7", [0, 0, 0]), "u must be a non-zero"),
    (lambda m: m.effective_mass(np.zeros(7), "panda_link7", [np.nan, 0, 0]), "u must be a finite"),
    (lambda m: m.effective_mass(np.zeros(7), "panda_link7", [1, 0, 0, 0, 0, 0], point=[0, 0, 0]),
     "with a point, u must be a"),
    (lambda m: m.effective_mass(np.zeros(7), "panda_link7", [1, 0, 0], point=[0, np.inf, 0]),
     "point"),
    (lambda m: default_points(m, extra=[("panda_link7", (0, 0))]), "offset must be 3"),
    (lambda m: default_points(m, extra=[("hand", (0, 0, 0))]), "unknown frame 'hand'"),
    (lambda m: BodyModel.load()["elbow"], "unknown body region 'elbow'"),
    (lambda m: BodyModel.load()["hands_fingers"].pressure("thumb"), "no area 'thumb'"),
    (lambda m: permissible_speed(BodyModel.load()["chest"], -1.0), "m_R must be > 0"),
    (lambda m: permissible_speed(BodyModel.load()["chest"], 5.0, contact_area=0), "contact_area"),
])
def test_bad_input_names_the_argument(call, match):
    model = RobotModel.from_urdf_file(robot_path("panda"))
    with pytest.raises((InputError, UnknownFrameError), match=match):
        call(model)


@pytest.mark.parametrize("text, match", [
    ("regions: [1, 2", "not valid YAML"),
    ("regions: {}", "non-empty 'regions'"),
    ("regions: {hand: {effective_mass: 0.6, spring_constant: 75, areas: {palm: 260}}}",
     "region 'hand': missing field 'force'"),
    ("regions: {hand: {effective_mass: -0.6, spring_constant: 75, force: 140, areas: {p: 1}}}",
     "region 'hand', effective_mass must be finite and > 0"),
    ("regions: {hand: {effective_mass: 0.6, spring_constant: 75, force: 140, "
     "transient_factor: 0.5, areas: {p: 1}}}", "transient_factor must be >= 1"),
    ("regions: {hand: {effective_mass: 0.6, spring_constant: .nan, force: 140, areas: {p: 1}}}",
     "spring_constant must be finite"),
    ("regions: {hand: {effective_mass: 0.6, spring_constant: 75, force: 140, areas: {p: x}}}",
     "area 'p' must be a number"),
])
def test_malformed_body_model(tmp_path, text, match):
    f = tmp_path / "body.yaml"
    f.write_text(text)
    with pytest.raises(InputError, match=match):
        BodyModel.load(f)
    with pytest.raises(InputError, match="cannot read body model"):
        BodyModel.load(tmp_path / "missing.yaml")


def test_trajectory_bad_input():
    model = RobotModel.from_urdf_file(robot_path("panda"))
    mon = SafetyMonitor(model, default_points(model), BodyModel.load()["chest"])
    P = np.zeros((3, 7))
    with pytest.raises(InputError, match=r"positions must have shape \(K, 7\)"):
        check_trajectory(mon, np.zeros((3, 6)), P, [0, 1, 2])
    with pytest.raises(InputError, match=r"velocities must have shape \(3, 7\)"):
        check_trajectory(mon, P, np.zeros((2, 7)), [0, 1, 2])
    with pytest.raises(InputError, match="non-decreasing"):
        check_trajectory(mon, P, P, [0, 2, 1])
    bad = P.copy()
    bad[1, 4] = np.nan
    with pytest.raises(InputError, match=r"velocities\[1\]\[4\] is nan"):
        check_trajectory(mon, P, bad, [0, 1, 2])


@pytest.mark.parametrize("region", ["skull_forehead", "face"])
@pytest.mark.parametrize("t0", [0.0, 0.5])
def test_trajectory_under_a_region_without_transient_contact_is_refused(region, t0):
    """Skull/forehead and face permit no transient contact (v_max = 0): a trajectory that
    moves any point cannot be made safe by slowing down. Refused with a message saying so
    (it was s = inf: times inf or NaN, which the node failed to convert); standing still
    (and a wrist motion that moves no monitored point) is compliant as is."""
    model = RobotModel.from_urdf_file(robot_path("panda"))
    bm = BodyModel.load()
    assert bm[region].transient_force() == 0.0
    mon = SafetyMonitor(model, default_points(model), bm[region])
    P = np.linspace(np.zeros(7), np.full(7, 0.4), 3)
    V = np.zeros((3, 7))
    V[1, 1] = 0.2                              # waypoint 1 moves the arm
    t = t0 + np.arange(3.0)
    with pytest.raises(InputError, match=rf"body region '{region}' permits no transient "
                       r"contact.*waypoint 1 moves .*cannot be made safe by slowing down"):
        check_trajectory(mon, P, V, t)
    V[1, 1] = 0.0
    V[:, 6] = 1.0                              # only joint 7: no monitored point moves
    chk = check_trajectory(mon, P, V, t, max_time=2 ** 31 - 1)
    assert chk.scale == 1.0 and (chk.ratio == 0).all()
    np.testing.assert_array_equal(chk.time_from_start, t)


def test_retiming_whose_times_exceed_max_time_is_refused():
    """A tiny contact area makes v_max tiny and s huge: hands, 1e-16 m^2 at the most
    restrictive transient pressure p_T (380 N/cm^2): F = 3.8e-10 N, v_max = F / sqrt(mu k)
    ~ 2e-12 m/s against the flange's 0.088 m/s (joint 1 at 1 rad/s, q = 0): s ~ 4e10.
    Retimed times beyond max_time (what a message's int32 seconds hold) are refused (the
    node wrapped them to a negative sec); within it, the same s is applied."""
    model = RobotModel.from_urdf_file(robot_path("panda"))
    hand = BodyModel.load()["hands_fingers"]
    area = 1e-16
    mon = SafetyMonitor(model, default_points(model), hand, contact_area=area)
    P = np.zeros((2, 7))
    V = np.zeros((2, 7))
    V[1, 0] = 1.0
    chk = check_trajectory(mon, P, V, [0.0, 1e-3])
    # mu <= m_H, so v_max >= p_T A / sqrt(m_H k) and s <= 0.088 sqrt(m_H k) / (p_T A)
    s_max = 0.088 * math.sqrt(hand.effective_mass * hand.spring_constant) / (
        hand.pressure(transient=True) * area)
    assert 1e10 < chk.scale <= s_max * (1 + 1e-9) and chk.scale == chk.ratio[1]
    assert chk.time_from_start[1] == pytest.approx(1e-3 * chk.scale, rel=1e-15)
    for t in ([0.0, 2.0], [1.0, 1.0]):
        with pytest.raises(InputError, match=r"would put time_from_start at .* s, beyond "
                           r"max_time = 2147483647 s: refused"):
            check_trajectory(mon, P, V, t, max_time=2 ** 31 - 1)
    assert check_trajectory(mon, P, V, [0.0, 1e-3], max_time=2 ** 31 - 1).scale == chk.scale
    with pytest.raises(InputError, match="overflowing float64"):
        check_trajectory(mon, P, V, [0.0, 1e300])
    # 1e-320 m^2: v_max ~ 1e-316 m/s, every moving point's ratio overflows to inf although
    # F > 0 (the first: link4, links 1-3 lie on joint 1's axis at q = 0)
    mon = SafetyMonitor(model, default_points(model), hand, contact_area=1e-320)
    with pytest.raises(InputError, match=r"the permissible speed is 0 to machine precision "
                       r"\(contact_area 1e-320 m\^2\): waypoint 1 moves 'panda_link4'.*cannot "
                       r"be made safe by slowing down"):
        check_trajectory(mon, P, V, [0.0, 1.0])
