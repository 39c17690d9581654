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


@pytest.mark.parametrize("frame_id", FRAME_IDS[:4])
@pytest.mark.parametrize("link,joint", [("", ""), ("l", "j"), ("panda_link5", "panda_joint5"),
                                        ("wörld_ß", "abc")])
def test_contact_layout_reads_back_as_the_message(frame_id, link, joint):
    """Every string length mod 4 before the bool and float64 fields (their alignment),
    with and without a contact point, the same buffer refilled."""
    from manip_dynamics_interfaces.msg import Contact

    rng = np.random.default_rng(len(frame_id) * 7 + len(link) + len(joint))
    layout = wire.ContactWire(frame_id, link, joint)
    for k in range(4):
        stamp, (norm, when), pf = _stamp(rng), _values(rng, 2), _values(rng, 6)
        valid, in_contact = k % 2 == 0, k != 1
        expected = Contact(in_contact=in_contact, isolated_link=link, isolated_joint=joint,
                           residual_norm=float(norm), detection_time=float(when),
                           contact_point_valid=valid)
        expected.header.stamp, expected.header.frame_id = stamp, frame_id
        if valid:
            c, f = expected.contact_point, expected.contact_force
            c.x, c.y, c.z, f.x, f.y, f.z = pf.tolist()
        data = layout.fill(stamp, in_contact, norm, when, pf[:3] if valid else None,
                           pf[3:] if valid else None)
        assert deserialize_message(data, Contact) == expected


def test_contact_wires_check_every_layout_they_use():
    """ContactWires (the node's contact layouts) of the Panda: raw, each isolated joint's
    layout built once and reused; a layout that reads back otherwise turns raw off."""
    from manip_dynamics.nodes.contact_outputs import ContactWires

    model = RobotModel.from_urdf_file(robots.path("panda"))
    wires = ContactWires(model)
    assert wires.raw
    layouts = [wires.contact(j) for j in range(-1, model.n)]
    assert wires.raw and len({id(x) for x in layouts}) == model.n + 1
    assert wires.contact(3) is layouts[4] and wires.torques("a") is wires.torques("a")
    broken = ContactWires(model)
    original = wire.ContactWire
    try:
        wire.ContactWire = lambda frame_id, link, joint: original(frame_id, link + "x", joint)
        broken.contact(2)
    finally:
        wire.ContactWire = original
    assert not broken.raw
