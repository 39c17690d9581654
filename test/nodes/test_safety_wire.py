"""~/collision_safety and ~/speed_scale as serialised layouts rewritten per state
(manip_dynamics.nodes.wire.CollisionSafetyWire, Float64Wire): rclpy's own deserialisation
of the bytes gives the message built field by field in this test from the assessment
(labels of every length mod 8, so every alignment of the float64 blocks; an unmovable
point's inf; every stamp field)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from geometry_msgs.msg import Point, Vector3
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64, Header

from manip_dynamics import RobotModel, robots
from manip_dynamics.nodes import wire
from manip_dynamics.nodes.safety_outputs import SafetyWires
from manip_dynamics.safety import BodyModel, MonitoredPoint, SafetyMonitor, default_points
from manip_dynamics_interfaces.msg import CollisionSafety, SafetyPoint


def expected_message(header, monitor, state):
    mo = state.motion
    msg = CollisionSafety(header=header, body_region=monitor.region.key,
                          contact_area=float(monitor.contact_area or 0.0),
                          worst=state.worst, speed_scale=state.speed_scale,
                          simplified_robot_mass=float(state.simplified_mass),
                          simplified_permissible_speed=float(state.simplified_v_max))
    for i, p in enumerate(monitor.points):
        msg.points.append(SafetyPoint(
            link=p.link, label=p.label, position=Point(**dict(zip("xyz", mo.position[i]))),
            speed=float(mo.speed[i]), direction=Vector3(**dict(zip("xyz", mo.direction[i]))),
            effective_mass=float(mo.effective_mass[i]), permissible_speed=float(state.v_max[i]),
            ratio=float(state.ratio[i])))
    return msg


@pytest.mark.parametrize("area", [None, 1e-4])
def test_collision_safety_layout_reads_back_as_the_message(area):
    model = RobotModel.from_urdf_file(robots.path("panda"))
    extra = [MonitoredPoint("panda_link7", (0.0, 0.0, 0.01 * k), "x" * k) for k in range(1, 9)]
    extra.append(MonitoredPoint("panda_link0", (0.1, 0.0, 0.0), "fixed"))   # m = inf
    monitor = SafetyMonitor(model, default_points(model, extra=extra),
                            BodyModel.load()["hands_fingers"], contact_area=area)
    points = monitor.points
    layout = wire.CollisionSafetyWire(
        "world", monitor.region.key, float(area or 0.0), [p.link for p in points],
        [p.label for p in points], monitor.simplified_mass, monitor.simplified_v_max)
    rng = np.random.default_rng(2)
    table = np.empty(monitor.kinematics.table_shape)
    for sec, nanosec in ((1_700_000_123, 987_654_321), (0, 0), (2**31 - 1, 999_999_999)):
        q, qd = rng.uniform(-2, 2, 7), rng.uniform(-6, 6, 7)      # (too fast: scale < 1)
        state = monitor.assess(q, qd)
        worst, scale = monitor.assess_into(q, qd, table)
        header = Header(frame_id="world")
        header.stamp.sec, header.stamp.nanosec = sec, nanosec
        got = deserialize_message(layout.fill(header.stamp, table, worst, scale),
                                  CollisionSafety)
        assert got == expected_message(header, monitor, state)
        assert math.isinf(got.points[-1].effective_mass)
        assert got.worst == state.worst and 0 < got.speed_scale < 1


@pytest.mark.parametrize("value", [0.0, 1.0, 0.123456789, math.inf])
def test_float64_layout_reads_back_as_the_message(value):
    data = wire.Float64Wire().fill(value)
    assert deserialize_message(data, Float64) == Float64(data=value)


def test_safety_wires_match_on_a_branching_tree():
    """The node's buffers for a monitor check themselves at construction (raw True)."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "core"))
    import urdf_factory as uf
    model = RobotModel.from_urdf_string(uf.random_tree(seed=1))
    monitor = SafetyMonitor(model, default_points(model), BodyModel.load()["chest"])
    wires = SafetyWires(monitor, model.root_link)
    assert wires.raw
    assert wires.table.shape == (len(monitor.points), 10)
