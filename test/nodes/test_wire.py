"""``manip_dynamics.nodes.wire``: the node's outputs laid out once as serialised bytes and
rewritten per state.

The reference is rclpy's own type support: the bytes must deserialise
(``rclpy.serialization.deserialize_message``) to the message built field by field with
the generated setters, for every shape the node publishes (7 and 29 joints, one joint,
frame ids of several lengths and non-ASCII, with and without velocities), again after
the same buffer has been refilled with other values; and ``StateOutputs`` must use the
layouts only when they read back (a layout of another frame id does not). No middleware
traffic here: the node's tests check the published outputs over DDS.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header

from manip_dynamics import RobotModel, robots
from manip_dynamics.nodes import wire
from manip_dynamics.nodes.state_outputs import StateOutputs
from manip_dynamics.rules.snapshot import MarkerOptions, Snapshot
from manip_dynamics_interfaces.msg import Dynamics

FRAME_IDS = ["", "b", "ab", "abc", "base_link", "wörld_ß"]    # every length mod 4, UTF-8


def _stamp(rng):
    header = Header()
    header.stamp.sec = int(rng.integers(-2**31, 2**31 - 1))
    header.stamp.nanosec = int(rng.integers(0, 10**9))
    return header.stamp


def _names(n):
    return [f"joint_{'x' * (i % 5)}{i}" for i in range(n)]      # names of varied lengths


def _values(rng, *shape):
    return rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, size=shape)


@pytest.mark.parametrize("n", [1, 7, 29])
@pytest.mark.parametrize("frame_id", FRAME_IDS)
def test_joint_state_layout_reads_back_as_the_message(n, frame_id):
    rng = np.random.default_rng(n * 31 + len(frame_id))
    names = _names(n)
    for with_velocity in (True, False):
        layout = wire.JointStateWire(names, frame_id, with_velocity)
        for _ in range(3):                      # the same buffer, refilled
            stamp = _stamp(rng)
            q, qd, effort = _values(rng, n), _values(rng, n), _values(rng, n)
            expected = JointState(name=names, position=q.tolist(),
                                  velocity=qd.tolist() if with_velocity else [],
                                  effort=effort.tolist())
            expected.header.stamp, expected.header.frame_id = stamp, frame_id
            data = layout.fill(stamp, q, qd, effort)
            assert deserialize_message(data, JointState) == expected
            # the same bytes as rclpy's serialisation up to its padding and slack (which
            # rclpy does not zero): same length but for a trailing slack of < 16 bytes
            assert 0 <= len(serialize_message(expected)) - len(data) < 16


@pytest.mark.parametrize("m", [0, 1, 6, 29])
def test_float64_array_layout_reads_back_as_the_message(m):
    rng = np.random.default_rng(m)
    layout = wire.Float64ArrayWire(m)
    for _ in range(3):
        values = _values(rng, m)
        assert deserialize_message(layout.fill(values), Float64MultiArray) == \
            Float64MultiArray(data=values.tolist())


@pytest.mark.parametrize("n", [1, 7, 29])
@pytest.mark.parametrize("frame_id,tip", [("", "t"), ("panda_link0", "panda_hand_tcp"),
                                          ("wörld", "ab")])
def test_dynamics_layout_reads_back_as_the_message(n, frame_id, tip):
    rng = np.random.default_rng(n + len(frame_id) + len(tip))
    names = _names(n)
    layout = wire.DynamicsWire(names, frame_id, tip)
    for near in (True, False, True):
        stamp = _stamp(rng)
        q, qd, g = _values(rng, n), _values(rng, n), _values(rng, n)
        terms = SimpleNamespace(c=_values(rng, n), M=_values(rng, n, n), J=_values(rng, 6, n),
                                Lambda=_values(rng, 6, 6), A=_values(rng, 6, 6))
        cond = float(rng.uniform(1.0, 1e9))
        expected = Dynamics(joint_names=names, tip_frame=tip, position=q.tolist(),
                            velocity=qd.tolist(), gravity=g.tolist(), coriolis=terms.c.tolist(),
                            mass_matrix=terms.M.ravel().tolist(),
                            jacobian=terms.J.ravel().tolist(),
                            effective_inertia=terms.Lambda.ravel().tolist(),
                            inverse_effective_inertia=terms.A.ravel().tolist(),
                            condition_number=cond, near_singular=near)
        expected.header.stamp, expected.header.frame_id = stamp, frame_id
        data = layout.fill(stamp, q, qd, g, terms, cond, near)
        assert deserialize_message(data, Dynamics) == expected


def test_matches_refuses_bytes_of_another_message():
    names = _names(3)
    header = Header(frame_id="a")
    q = np.arange(3.0)
    data = wire.JointStateWire(names, "b", True).fill(header.stamp, q, q, q)
    expected = JointState(name=names, position=q.tolist(), velocity=q.tolist(),
                          effort=q.tolist())
    expected.header = header
    assert not wire.matches(data, expected)
    assert not wire.matches(data[:20], expected)           # truncated: does not deserialise
    expected.header.frame_id = "b"
    assert wire.matches(data, expected)


def _outputs(model):
    snapshot = Snapshot(model=model, tip_frame=model.default_tip,
                        command_joints=tuple(model.joint_names[:3]), damping=1e-3,
                        singular_condition=1e6, markers=MarkerOptions())
    values = {"max_state_age": 0.0, "joint_states_latest_wins": True,
              "joint_states_backlog": 2}
    for name in ("dynamics", "gravity_torques", "gravity_command", "coriolis_torques"):
        values[f"outputs.{name}.enabled"], values[f"outputs.{name}.rate"] = True, 0.0
    return StateOutputs(snapshot, values, publishers={})


def test_state_outputs_use_the_layouts_only_when_they_read_back():
    model = RobotModel.from_urdf_file(robots.path("panda"))
    outputs = _outputs(model)
    assert outputs.raw                       # rclpy reads every layout back
    names = list(model.joint_names)
    assert outputs._joint_state_matches(wire.JointStateWire(names, "base", True), "base",
                                        True)
    # a layout of another frame id, or without the velocities, is refused
    assert not outputs._joint_state_matches(wire.JointStateWire(names, "other", True),
                                            "base", True)
    assert not outputs._joint_state_matches(wire.JointStateWire(names, "base", False),
                                            "base", True)


def test_state_outputs_match_names_in_any_order_also_once_cached():
    """q and qd in model order from serialised joint states read by wire_in's reader,
    the names in an order that is not its own inverse (a reversal is: an inverted index
    would pass) with an extra joint among them, against the values looked up by name
    here; the first message validates and caches the index, the next ones use it."""
    from manip_dynamics.nodes.wire_in import JointStateReader

    model = RobotModel.from_urdf_file(robots.path("panda"))
    outputs, read = _outputs(model), JointStateReader()
    order = [3, 0, 6, 1, 5, 2, 4]                 # order[order] != identity
    assert [order[i] for i in order] != list(range(7))
    names = [model.joint_names[i] for i in order]
    names.insert(3, "panda_finger_joint1")
    rng = np.random.default_rng(5)
    for _ in range(3):
        position, velocity = rng.normal(size=8), rng.normal(size=8)
        msg = read(serialize_message(JointState(name=names, position=position.tolist(),
                                                velocity=velocity.tolist())))
        q, qd = outputs.vectors(msg)
        np.testing.assert_array_equal(q, [dict(zip(names, position))[j]
                                          for j in model.joint_names])
        np.testing.assert_array_equal(qd, [dict(zip(names, velocity))[j]
                                           for j in model.joint_names])


# ------------------------------------------------------------------ contact outputs
@pytest.mark.parametrize("frame_id", FRAME_IDS)
def test_wrench_stamped_layout_reads_back_as_the_message(frame_id):
    from geometry_msgs.msg import WrenchStamped

    rng = np.random.default_rng(len(frame_id))
    layout = wire.WrenchStampedWire(frame_id)
    for _ in range(3):
        stamp, F = _stamp(rng), _values(rng, 6)
        expected = WrenchStamped()
        expected.header.stamp, expected.header.frame_id = stamp, frame_id
        w = expected.wrench
        w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z = F.tolist()
        assert deserialize_message(layout.fill(stamp, F), WrenchStamped) == expected


def _contact(stamp, frame_id, link, joint, in_contact, norm, when, point, force, names, r,
             wrench_frame, F, candidates=()):
    """The Contact message built here field by field with the generated setters (point
    and force None: contact_point_valid false, zeros)."""
    from manip_dynamics_interfaces.msg import Contact

    msg = Contact(in_contact=bool(in_contact), isolated_link=link, isolated_joint=joint,
                  residual_norm=float(norm), detection_time=float(when),
                  contact_point_valid=point is not None, joint_names=list(names),
                  external_torques=[float(x) for x in r], wrench_frame=wrench_frame,
                  candidate_links=list(candidates))
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    if point is not None:
        c, f = msg.contact_point, msg.contact_force
        c.x, c.y, c.z = (float(x) for x in point)
        f.x, f.y, f.z = (float(x) for x in force)
    w = msg.external_wrench
    w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z = (float(x) for x in F)
    return msg


@pytest.mark.parametrize("frame_id", FRAME_IDS[:4])
@pytest.mark.parametrize("link,joint", [("", ""), ("l", "j"), ("panda_link5", "panda_joint5"),
                                        ("wörld_ß", "abc")])
def test_contact_layout_reads_back_as_the_message(frame_id, link, joint):
    """Every string length mod 4 before the bool and float64 fields (their alignment),
    joint name lists of 1, 2, 7 and 29 names of varied lengths and wrench frames of every
    length mod 4 (before the external_torques and external_wrench float64s), with and
    without a contact point, in and out of contact, the same buffer refilled."""
    from manip_dynamics_interfaces.msg import Contact

    rng = np.random.default_rng(len(frame_id) * 7 + len(link) + len(joint))
    for n, wrench_frame in ((1, "t"), (2, "ab"), (7, "abc"), (29, FRAME_IDS[5])):
        names = _names(n)
        candidates = (link, *FRAME_IDS[:n % 4]) if link else ()
        layout = wire.ContactWire(frame_id, link, joint, names, wrench_frame, candidates)
        for k in range(4):
            stamp, (norm, when), pf = _stamp(rng), _values(rng, 2), _values(rng, 6)
            r, F = _values(rng, n), _values(rng, 6)
            valid, in_contact = k % 2 == 0, k != 1
            point, force = (pf[:3], pf[3:]) if valid else (None, None)
            expected = _contact(stamp, frame_id, link, joint, in_contact, norm, when, point,
                                force, names, r, wrench_frame, F, candidates)
            data = layout.fill(stamp, in_contact, norm, when, point, force, r, F)
            assert deserialize_message(data, Contact) == expected


def _probe_live(model, rng, joint, with_point):
    """A LiveResult-like result with random values: isolated joint ``joint`` (-1: none,
    out of contact), residual r (n,), wrench F (6,), a contact point or None."""
    from manip_dynamics.core.contact.detector import (ContactPoint, arm_topology,
                                                      joint_candidates)

    topology = arm_topology(model)
    point = (ContactPoint(_values(rng, 3), _values(rng, 3), 0.5, 0.0, None) if with_point
             else None)
    return SimpleNamespace(in_contact=joint >= 0, joint=joint,
                           link=topology.joint_link[joint] if joint >= 0 else "",
                           candidates=joint_candidates(topology)[joint] if joint >= 0 else (),
                           residual_norm=float(rng.uniform(0.0, 50.0)),
                           residual=_values(rng, model.n), F=_values(rng, 6), point=point)


def _rclpy_bytes_match(data: bytes, expected) -> bool:
    """``data`` equals rclpy's serialisation of ``expected`` byte for byte, but for
    rclpy's padding (its type support does not zero it, see the JointState test above:
    where ``data`` has a zero byte, rclpy's may differ) and its trailing slack of < 16
    bytes. (Every value is also compared by deserialising ``data``.)"""
    ours = np.frombuffer(data, dtype=np.uint8)
    theirs = np.frombuffer(serialize_message(expected), dtype=np.uint8)
    if not 0 <= len(theirs) - len(ours) < 16:
        return False
    differ = np.flatnonzero(ours != theirs[:len(ours)])
    return bool(np.all(ours[differ] == 0))


@pytest.mark.parametrize("robot,tip", [("panda", "panda_link8"), ("panda", "panda_link3"),
                                       ("planar_2r", None), ("planar_rp", None)])
def test_contact_wires_equal_rclpy_serialisation_of_contact_message(robot, tip):
    """The node's ~/contact layouts (ContactWires.contact of every isolated joint, -1 for
    none) for the 7-DOF Panda (two tip frames), a 2-DOF planar arm and a revolute-prismatic
    one, filled as _publish fills them: the bytes read back as contact_message of the same
    result, which equals the message built here field by field from the same values, and
    are rclpy's serialisation of it (but for padding); external_torques and
    external_wrench hold the values the JointState and WrenchStamped layouts carry."""
    from geometry_msgs.msg import WrenchStamped

    from manip_dynamics.nodes.contact_outputs import ContactWires, contact_message
    from manip_dynamics_interfaces.msg import Contact

    model = RobotModel.from_urdf_file(robots.path(robot))
    tip = tip or model.default_tip
    root, names = model.root_link, list(model.joint_names)
    wires = ContactWires(model, tip)
    rng = np.random.default_rng(model.n + len(tip))
    prismatic = [j for j in range(model.n) if _joint_type(robot, names[j]) == "prismatic"]
    assert (robot == "planar_rp") == bool(prismatic)        # the model has a prismatic joint
    for joint in range(-1, model.n):
        layout = wires.contact(joint)
        for with_point in ((False,) if joint < 0 else (False, True)):
            live = _probe_live(model, rng, joint, with_point)
            stamp = _stamp(rng)
            when = float(rng.uniform(1e9, 2e9)) if live.in_contact else 0.0
            point = live.point
            data = layout.fill(stamp, live.in_contact, live.residual_norm, when,
                               None if point is None else point.point,
                               None if point is None else point.force, live.residual, live.F)
            message = contact_message(Header(stamp=stamp, frame_id=root), model, live, when,
                                      tip)
            expected = _contact(stamp, root, live.link,
                                names[joint] if joint >= 0 else "", live.in_contact,
                                live.residual_norm, when,
                                None if point is None else point.point,
                                None if point is None else point.force, names,
                                live.residual, tip, live.F, live.candidates)
            assert message == expected
            got = deserialize_message(data, Contact)
            assert got == expected
            assert _rclpy_bytes_match(data, message)
            # the same values as ~/external_torques' effort and ~/external_wrench's wrench
            torques = deserialize_message(wires.torques("js").fill(
                stamp, _values(rng, model.n), _values(rng, model.n), live.residual),
                JointState)
            wrench = deserialize_message(wires.wrench.fill(stamp, live.F), WrenchStamped)
            assert got.joint_names == torques.name
            np.testing.assert_array_equal(got.external_torques, torques.effort)
            assert got.external_wrench == wrench.wrench
    assert wires.raw


def _joint_type(robot, joint_name):
    """The type attribute of joint ``joint_name`` in the embedded URDF (read as XML)."""
    import xml.etree.ElementTree as ET

    for j in ET.parse(robots.path(robot)).getroot().iter("joint"):
        if j.get("name") == joint_name:
            return j.get("type")
    raise KeyError(joint_name)


def test_contact_wires_check_every_layout_they_use():
    """ContactWires (the node's contact layouts) of the Panda: raw, each isolated joint's
    layout built once and reused; a layout that reads back otherwise (a wrong link name,
    the joint names in another order, another wrench frame, the candidates cut) turns raw
    off."""
    from manip_dynamics.nodes.contact_outputs import ContactWires

    model = RobotModel.from_urdf_file(robots.path("panda"))
    wires = ContactWires(model, "panda_link8")
    assert wires.raw
    layouts = [wires.contact(j) for j in range(-1, model.n)]
    assert wires.raw and len({id(x) for x in layouts}) == model.n + 1
    assert wires.contact(3) is layouts[4] and wires.torques("a") is wires.torques("a")
    original = wire.ContactWire
    for change in (lambda a: (a[0], a[1] + "x") + a[2:],
                   lambda a: a[:3] + (a[3][::-1],) + a[4:],
                   lambda a: a[:4] + ("panda_link7",) + a[5:],
                   lambda a: a[:5] + (a[5][:1],)):          # the candidates cut
        broken = ContactWires(model, "panda_link8")
        try:
            wire.ContactWire = lambda *args, change=change: original(*change(args))
            broken.contact(2)
        finally:
            wire.ContactWire = original
        assert not broken.raw
