"""The simulator's ROS-free rules: the parameter table and its checks, the command rules.

Fast unit tests without any node; the last one checks that ``manip_dynamics.sim`` really
imports no ROS (a fresh interpreter, so nothing else has loaded rclpy).
"""
import subprocess
import sys

import numpy as np
import pytest

from manip_dynamics.sim.commands import CommandHold, MeasurementNoise
from manip_dynamics.sim.parameters import BY_NAME, PARAMETERS, check, per_joint

JOINTS = ["joint1", "joint2"]


@pytest.mark.parametrize("spec", PARAMETERS, ids=lambda p: p.name)
def test_every_default_passes_its_own_check(spec):
    assert spec.description and spec.kind in (
        "bool", "integer", "double", "string", "double_array", "string_array")
    assert check(spec.name, spec.default, JOINTS) == ""


@pytest.mark.parametrize("name,value,words", [
    ("publish_rate", 0.0, ["publish_rate", ">= 0.001"]),
    ("coulomb_velocity", float("nan"), ["coulomb_velocity", "finite"]),
    ("viscous_friction", [-1.0], ["viscous_friction", ">= 0"]),
    ("viscous_friction", [0.1, 0.2, 0.3], ["viscous_friction", "1 or 2 values"]),
    ("initial_positions", [0.1], ["initial_positions", "2 values", "joint1, joint2"]),
    ("obstacle_size", [0.1, 0.1], ["obstacle_size", "3 values"]),
    ("plant", "bullet", ["plant", "mujoco", "model"]),
    ("command_joints", ["joint1", "joint1"], ["command_joints", "duplicate"]),
    ("command_joints", ["joint3"], ["command_joints", "joint3", "joint1, joint2"]),
])
def test_a_refused_value_names_the_parameter_and_the_rule(name, value, words):
    reason = check(name, value, JOINTS)
    assert reason and all(w in reason for w in words), reason


def test_integrators_depend_on_the_plant():
    assert check("integrator", "implicitfast", JOINTS, "mujoco") == ""
    reason = check("integrator", "implicitfast", JOINTS, "model")
    assert "model" in reason and "rk4" in reason
    assert "rk4" in check("integrator", "euler", JOINTS, "mujoco")


def test_per_joint_broadcasts_and_defaults():
    assert per_joint([0.5], 3, [0, 0, 0]) == [0.5, 0.5, 0.5]
    assert per_joint([], 2, np.array([1.0, 2.0])) == [1.0, 2.0]
    assert per_joint(None, 2, [3.0, 4.0]) == [3.0, 4.0]
    assert BY_NAME["plant"].read_only and not BY_NAME["paused"].read_only


def test_a_command_holds_until_its_timeout_then_zero():
    hold = CommandHold(2, timeout=0.5)
    assert list(hold.torque(0.0)) == [0.0, 0.0] and not hold.newly_timed_out(0.0)
    hold.accept([1.0, -2.0], now=10.0)
    assert list(hold.torque(10.5)) == [1.0, -2.0]
    assert list(hold.torque(10.6)) == [0.0, 0.0]
    assert hold.newly_timed_out(10.6) and not hold.newly_timed_out(10.7)   # warn once


def test_lockstep_answer_by_stamp_or_by_arrival():
    hold = CommandHold(1, timeout=1.0)
    assert hold.answered()                        # nothing published yet: step freely
    hold.published((5, 0), now=1.0)
    assert not hold.answered()
    hold.accept([0.0], now=1.1, stamp=(4, 990000000))   # answers an older state
    assert not hold.answered()
    hold.accept([0.0], now=1.2, stamp=(5, 0))
    assert hold.answered()
    hold.published((5, 10000000), now=2.0)
    hold.accept([0.0], now=2.1)                   # unstamped: any command after it
    assert hold.answered() and hold.waited(2.5) == pytest.approx(0.5)


def test_noise_has_the_requested_spread_and_zero_is_exact():
    noise = MeasurementNoise(seed=3)
    x = np.zeros(20000)
    assert noise("position", x) is x
    noise.sigma["velocity"] = 0.01
    assert np.std(noise("velocity", x)) == pytest.approx(0.01, rel=0.05)


def test_the_sim_package_imports_no_ros():
    code = ("import sys, manip_dynamics.sim.plants, manip_dynamics.sim.render, "
            "manip_dynamics.sim.commands; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('rclpy', 'rcl_interfaces')]; "
            "sys.exit(str(bad) if bad else 0)")
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True)
