"""``manip_dynamics.nodes.markers``: the effective-inertia ellipsoid markers.

Pure-function tests (no middleware): the ellipsoid's pose and size reproduce the core's
translational Lambda through the documented mapping (semi-axis = scale * sqrt(lambda),
SPHERE scale = diameter), the rotation is proper and the quaternion unit, caps and colours
behave as documented, ids are stable, DELETEALL clears. The last test receives
``~/inertia_markers`` from a running ``dynamics_node`` process.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.errors import InputError
from manip_dynamics.nodes import markers
from manip_dynamics.rules.snapshot import MarkerOptions, Snapshot

# A generic, well-conditioned Panda configuration (inside the joint limits).
Q_PANDA = np.array([0.3, -0.4, 0.2, -2.0, 0.3, 1.8, 0.5])


@pytest.fixture(scope="module")
def panda():
    return RobotModel.from_urdf_file(robots.path("panda"))


def _snapshot(model, **options):
    return Snapshot(model=model, tip_frame=model.default_tip,
                    command_joints=tuple(model.joint_names), damping=1e-3,
                    singular_condition=1e6, markers=MarkerOptions(**options))


def _header(frame_id="", sec=12, nanosec=345):
    from std_msgs.msg import Header

    h = Header()
    h.frame_id = frame_id
    h.stamp.sec = sec
    h.stamp.nanosec = nanosec
    return h


def _by_ns(array, ns):
    return [m for m in array.markers if m.ns == ns]


def _rotation(q):
    return Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()


# --------------------------------------------------------------------------- mapping

def test_diameters_follow_documented_mapping():
    # semi-axis = scale * sqrt(lambda); SPHERE scale is the diameter.
    np.testing.assert_allclose(markers.ellipsoid_diameters([1.0, 4.0, 9.0], 0.1),
                               [0.2, 0.4, 0.6])
    np.testing.assert_allclose(markers.ellipsoid_diameters([0.25, 1.0, 2.25], 2.0),
                               [2.0, 4.0, 6.0])


def test_diameters_capped_at_max_axis_ratio():
    assert markers.MAX_AXIS_RATIO == 10.0
    # lambda_min = 1 -> cap 100 kg -> longest semi-axis 10 * shortest.
    np.testing.assert_allclose(markers.ellipsoid_diameters([1.0, 400.0, 1e12], 0.1),
                               [0.2, 2.0, 2.0])
    # a singular (infinite) direction is drawn at the cap, never inf / NaN
    np.testing.assert_allclose(markers.ellipsoid_diameters([4.0, 9.0, math.inf], 0.5),
                               [2.0, 3.0, 20.0])
    # every direction singular: a sphere of diameter 2 * scale
    np.testing.assert_allclose(markers.ellipsoid_diameters([math.inf] * 3, 0.1), [0.2] * 3)
    # never below the minimum diameter RViz accepts
    assert markers.ellipsoid_diameters([1e-30, 1e-30, 1e-30], 0.1).min() >= markers.MIN_DIAMETER


def test_colour_green_to_red_with_condition_number():
    green = markers.condition_color(markers.singularity_fraction(1.0, 1e6), 0.6)
    assert (green.r, green.g, green.b, green.a) == pytest.approx((0.0, 1.0, 0.0, 0.6))
    mid = markers.condition_color(markers.singularity_fraction(1e3, 1e6), 0.6)
    assert (mid.r, mid.g) == pytest.approx((1.0, 1.0))        # cond = sqrt(threshold): yellow
    red = markers.condition_color(markers.singularity_fraction(1e7, 1e6), 0.6)
    assert (red.r, red.g) == pytest.approx((1.0, 0.0))
    assert markers.singularity_fraction(10.0, 1e6, singular=True) == 1.0
    assert markers.singularity_fraction(math.inf, 1e6) == 1.0
    fractions = [markers.singularity_fraction(c, 1e6) for c in (1.0, 10.0, 1e2, 1e4, 1e6)]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0


# each branch of Shepperd's method: identity (trace pivot) and half turns about x, y, z
# (diagonal pivots), and near them
PIVOT_CASES = [np.eye(3)] + [Rotation.from_rotvec(axis * angle).as_matrix()
                             for axis in np.eye(3) for angle in (math.pi, math.pi - 1e-9, 2.5)]


def test_rotation_quaternion_is_unit_and_proper():
    rng = np.random.default_rng(3)
    cases = PIVOT_CASES + [Rotation.random(random_state=rng).as_matrix() for _ in range(20)]
    for r in cases:
        q = markers.rotation_quaternion(r)
        assert math.isclose(q.x**2 + q.y**2 + q.z**2 + q.w**2, 1.0, rel_tol=1e-12)
        np.testing.assert_allclose(_rotation(q), r, atol=1e-12)
        # a left-handed eigenbasis (one column flipped) still gives a proper rotation with
        # the same principal axes up to sign
        flipped = r.copy()
        flipped[:, 2] *= -1.0
        rq = _rotation(markers.rotation_quaternion(flipped))
        assert np.linalg.det(rq) == pytest.approx(1.0)
        np.testing.assert_allclose(np.abs(rq.T @ r), np.eye(3), atol=1e-12)


# --------------------------------------------------------------------------- marker array

def test_ellipsoid_reproduces_lambda(panda):
    scale = 0.1
    snap = _snapshot(panda, scale=scale)
    tip = snap.tip_frame
    # Reference Lambda built here from J and M (inverse by numpy, not the marker code).
    J = np.asarray(panda.jacobian(Q_PANDA, tip))[:3]
    M = np.asarray(panda.mass_matrix(Q_PANDA))
    lam_ref = np.linalg.inv(J @ np.linalg.solve(M, J.T))
    ev = np.linalg.eigvalsh(lam_ref)
    assert ev.max() / ev.min() < markers.MAX_AXIS_RATIO ** 2   # precondition: no capping

    array = markers.inertia_marker_array(snap, Q_PANDA, _header(panda.root_link))
    (sphere,) = _by_ns(array, markers.ELLIPSOID_NS)
    assert sphere.type == sphere.SPHERE and sphere.action == sphere.ADD and sphere.id == 0
    assert sphere.header.frame_id == panda.root_link
    assert (sphere.header.stamp.sec, sphere.header.stamp.nanosec) == (12, 345)

    o = sphere.pose.orientation
    assert math.isclose(o.x**2 + o.y**2 + o.z**2 + o.w**2, 1.0, rel_tol=1e-12)
    R = _rotation(o)
    assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-12)
    semi = np.array([sphere.scale.x, sphere.scale.y, sphere.scale.z]) / 2.0
    lam_drawn = R @ np.diag((semi / scale) ** 2) @ R.T
    np.testing.assert_allclose(lam_drawn, lam_ref, rtol=1e-6, atol=1e-9 * ev.max())

    X = np.asarray(panda.frame_pose(Q_PANDA, tip))
    p = sphere.pose.position
    np.testing.assert_allclose([p.x, p.y, p.z], X[:3, 3], atol=1e-12)
    # well conditioned: mostly green
    assert sphere.color.g == 1.0 and sphere.color.r < 1.0
    assert sphere.color.a == pytest.approx(MarkerOptions().alpha)


def test_empty_frame_id_becomes_root_link(panda):
    array = markers.inertia_marker_array(_snapshot(panda), Q_PANDA, _header(""))
    assert {m.header.frame_id for m in array.markers} == {panda.root_link}


def test_singular_is_capped_and_red():
    """The planar 2R arm's tip cannot move along y: an infinite effective mass there."""
    planar = RobotModel.from_urdf_file(robots.path("planar_2r"))
    q = np.array([0.3, 1.0])
    snap = _snapshot(planar, scale=0.1)
    ell = planar.inertia_ellipsoid(q, snap.tip_frame, linear_only=True)
    assert ell.singular and math.isinf(ell.eigenvalues[-1])   # precondition
    array = markers.inertia_marker_array(snap, q, _header(planar.root_link))
    (sphere,) = _by_ns(array, markers.ELLIPSOID_NS)
    d = np.array([sphere.scale.x, sphere.scale.y, sphere.scale.z])
    assert np.all(np.isfinite(d)) and d.min() > 0.0
    assert d.max() / d.min() == pytest.approx(markers.MAX_AXIS_RATIO)
    assert (sphere.color.r, sphere.color.g) == (1.0, 0.0)
    o = sphere.pose.orientation
    assert all(math.isfinite(v) for v in (o.x, o.y, o.z, o.w))
    # the two finite directions keep the documented mapping; the y axis is drawn capped
    R = _rotation(o)
    assert abs(R[:, 2] @ [0.0, 1.0, 0.0]) == pytest.approx(1.0)
    np.testing.assert_allclose(d[:2], 2 * 0.1 * np.sqrt(ell.eigenvalues[:2]), rtol=1e-12)
    (label,) = _by_ns(array, markers.ELLIPSOID_LABEL_NS)
    assert label.type == label.TEXT_VIEW_FACING and snap.tip_frame in label.text
    assert "inf" in label.text


def test_mass_matrix_bars(panda):
    scale = 0.2
    on = markers.inertia_marker_array(_snapshot(panda, scale=scale, show_mass_matrix=True),
                                      Q_PANDA, _header(panda.root_link))
    bars = _by_ns(on, markers.MASS_BARS_NS)
    assert [b.id for b in bars] == list(range(panda.n))
    assert all(b.type == b.CUBE and b.action == b.ADD for b in bars)
    mu = np.linalg.eigvalsh(np.asarray(panda.mass_matrix(Q_PANDA)))
    heights = np.array([b.scale.z for b in bars])
    expected = np.maximum(markers.BAR_HEIGHT_PER_SCALE * scale * mu / mu.max(),
                          markers.MIN_DIAMETER)
    np.testing.assert_allclose(heights, expected, rtol=1e-9)
    # bars stand on the x-y plane of the root link
    np.testing.assert_allclose([b.pose.position.z for b in bars], heights / 2.0)
    (text,) = _by_ns(on, markers.MASS_LABEL_NS)
    assert text.type == text.TEXT_VIEW_FACING and text.text.startswith("eig M(q)")

    off = markers.inertia_marker_array(_snapshot(panda, show_mass_matrix=False),
                                       Q_PANDA, _header(panda.root_link))
    # off: no bars at all (the node clears old ones with a DELETEALL on the option change)
    for ns in (markers.MASS_BARS_NS, markers.MASS_LABEL_NS):
        assert _by_ns(off, ns) == []
    assert [m.ns for m in off.markers] == [markers.ELLIPSOID_NS, markers.ELLIPSOID_LABEL_NS]


def test_namespaces_and_ids_are_stable(panda):
    snap = _snapshot(panda, show_mass_matrix=True)
    a = markers.inertia_marker_array(snap, Q_PANDA, _header(panda.root_link))
    b = markers.inertia_marker_array(snap, Q_PANDA + 0.1, _header(panda.root_link, sec=13))
    keys_a = [(m.ns, m.id) for m in a.markers]
    assert keys_a == [(m.ns, m.id) for m in b.markers]
    assert len(set(keys_a)) == len(keys_a)   # no two markers share (ns, id)


def test_reused_array_equals_a_fresh_one_state_after_state(panda):
    """The node updates one MarkerArray in place: after any sequence of states (and a
    refused one) it must equal, field by field, an array built fresh for the last state."""
    snap = _snapshot(panda, show_mass_matrix=True)
    reused = markers.InertiaMarkers(snap)
    rng = np.random.default_rng(11)
    for k in range(5):
        q = Q_PANDA + rng.uniform(-0.5, 0.5, 7)
        header = _header(panda.root_link, sec=100 + k, nanosec=k)
        fresh = markers.inertia_marker_array(snap, q, header)
        got = reused.update(q, header)
        assert got is reused.array and got == fresh
        assert [m.header.stamp.sec for m in got.markers] == [100 + k] * len(got.markers)
    with pytest.raises(InputError, match="not finite|nan"):
        reused.update(np.full(7, math.nan), _header(panda.root_link))
    assert reused.array == fresh                    # a refused state changes nothing


def test_markers_that_would_not_be_finite_are_refused(panda):
    huge = markers.InertiaMarkers(_snapshot(panda, scale=1e308))     # diameters overflow
    with pytest.raises(markers.MarkerError, match="would not be finite"):
        huge.update(Q_PANDA, _header(panda.root_link))
    # nothing written: the array is still the one a fresh builder holds (sphere first,
    # diameters 0), not a partial update
    untouched = markers.InertiaMarkers(_snapshot(panda, scale=1e308)).array
    assert huge.array.markers and huge.array.markers[0].ns == "effective_inertia"
    assert huge.array.markers[0].scale.x == 0.0 and huge.array == untouched


def test_delete_all():
    array = markers.delete_all(_header("base_link", sec=7))
    assert len(array.markers) == 1
    (m,) = array.markers
    assert m.action == m.DELETEALL
    assert m.header.frame_id == "base_link" and m.header.stamp.sec == 7


# --------------------------------------------------------------------------- over ROS

@pytest.mark.timeout(90)
def test_running_node_publishes_inertia_markers(node_process, ros_node, panda):
    """The real dynamics_node draws the ellipsoid at the tip of the published state."""
    from sensor_msgs.msg import JointState
    from visualization_msgs.msg import MarkerArray

    import ros_utils

    proc = node_process([
        "manip_dynamics.nodes.dynamics_node", "--ros-args",
        "-r", "__node:=dynamics_node",
        "-p", f"urdf_file:={robots.path('panda')}",
        "-p", "outputs.inertia_markers.enabled:=true",
        "-p", "outputs.inertia_markers.rate:=20.0",
        "-p", "markers.scale:=0.1",
    ])
    received = []

    def take(msg):
        if any(m.ns == markers.ELLIPSOID_NS for m in msg.markers):
            received.append(msg)

    sub = ros_node.create_subscription(MarkerArray, "/dynamics_node/inertia_markers", take, 10)

    def state():
        msg = JointState()
        msg.header.stamp = ros_node.get_clock().now().to_msg()
        msg.name = list(panda.joint_names)
        msg.position = Q_PANDA.tolist()
        msg.velocity = [0.0] * panda.n
        return msg

    try:
        ros_utils.publish_until(ros_node, JointState, "joint_states", state,
                                until=lambda: received or ros_utils.assert_running(proc),
                                timeout=60.0, period=0.05)
    finally:
        ros_node.destroy_subscription(sub)
    (sphere,) = _by_ns(received[-1], markers.ELLIPSOID_NS)
    assert sphere.header.frame_id == panda.root_link
    X = np.asarray(panda.frame_pose(Q_PANDA, panda.default_tip))
    p = sphere.pose.position
    np.testing.assert_allclose([p.x, p.y, p.z], X[:3, 3], atol=1e-9)
    J = np.asarray(panda.jacobian(Q_PANDA, panda.default_tip))[:3]
    lam_ref = np.linalg.inv(J @ np.linalg.solve(np.asarray(panda.mass_matrix(Q_PANDA)), J.T))
    R = _rotation(sphere.pose.orientation)
    semi = np.array([sphere.scale.x, sphere.scale.y, sphere.scale.z]) / 2.0
    np.testing.assert_allclose(R @ np.diag((semi / 0.1) ** 2) @ R.T, lam_ref, rtol=1e-6,
                               atol=1e-9)
    ros_utils.assert_running(proc)
