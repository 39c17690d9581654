"""arm_simulator as a real process over real DDS: energy, friction, commands, parameters."""
import math

import numpy as np
import pytest
import ros_utils
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from manip_dynamics import RobotModel, robots

pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")
SIM = "manip_dynamics.nodes.arm_simulator"


def _start(node_process, ros_node, *params):
    args = [SIM, "--ros-args", "-p", "robot:=planar_2r", "-p", "floor:=false"]
    for p in params:
        args += ["-p", p]
    proc = node_process(args)
    # Ready = first joint_states (the core JIT-compiles on the first call).
    ros_utils.wait_for_message(ros_node, JointState, "joint_states", timeout=60.0)
    return proc


def _energies(model, messages):
    return np.array([model.kinetic_energy(np.array(m.position), np.array(m.velocity))
                     + model.potential_energy(np.array(m.position)) for m in messages])


def test_passive_frictionless_arm_conserves_energy(node_process, ros_node):
    """MuJoCo RK4 at 1 kHz conserves E = T + V of the passive frictionless 2R (relative
    error << 1e-6, see test_integrator) until a joint hits its +-pi limit, where MuJoCo's
    limit constraint (time constant 2 ms) takes energy out; the arm never passes a limit
    by more than 0.03 rad (measured ~1e-2)."""
    _start(node_process, ros_node, "initial_positions:=[0.0, 0.0]", "paused:=true",
           "viscous_friction:=[0.0]", "coulomb_friction:=[0.0]")
    assert _set(ros_node, paused=False)[0] == [True]
    msgs = ros_utils.collect_messages(ros_node, JointState, "joint_states", 300, timeout=60.0)
    model = RobotModel.from_urdf_file(robots.path("planar_2r"))
    e = _energies(model, msgs)
    q = np.array([m.position for m in msgs])
    assert np.ptp(q[:, 0]) > 1.0                       # it swings (falls from horizontal)
    margin = np.minimum(q - model.position_lower, model.position_upper - q).min(axis=1)
    free = int(np.argmax(margin < 0.2)) if np.any(margin < 0.2) else len(q)
    assert free > 30                                   # 0.3 s of free swing at least
    assert np.max(np.abs(e[:free] - e[0])) < 1e-5 * 15.3
    assert margin.min() > -0.03
    assert all(list(m.effort) == [0.0, 0.0] for m in msgs)   # no command: zero torque


def test_friction_dissipates(node_process, ros_node):
    _start(node_process, ros_node, "initial_positions:=[0.0, 0.0]",
           "viscous_friction:=[0.2]", "coulomb_friction:=[0.3]")
    msgs = ros_utils.collect_messages(ros_node, JointState, "joint_states", 300, timeout=60.0)
    e = _energies(RobotModel.from_urdf_file(robots.path("planar_2r")), msgs)
    assert np.all(np.diff(e) < 1e-9)
    assert e[-1] < e[0] - 1.0                         # J lost in 3 s of swinging


def test_robot_description_is_latched(node_process, ros_node):
    _start(node_process, ros_node)
    msg = ros_utils.wait_for_message(ros_node, String, "robot_description",
                                     qos=ros_utils.latched_qos(), timeout=10.0)
    assert '<robot name="planar_2r"' in msg.data


def _effort_seen(ros_node, effort):
    """A joint_states message applying exactly ``effort`` within 0.3 s, else None."""
    try:
        return ros_utils.wait_for_message(ros_node, JointState, "joint_states", timeout=0.3,
                                          predicate=lambda m: list(m.effort) == effort)
    except TimeoutError:
        return None


def test_bad_commands_are_ignored_and_good_ones_applied(node_process, ros_node):
    proc = _start(node_process, ros_node, "initial_positions:=[-1.5707963, 0.0]",
                  "command_timeout:=0.5")
    joint_cmd = ros_node.create_publisher(JointState, "effort_command", 10)
    array_cmd = ros_node.create_publisher(Float64MultiArray, "arm_simulator/commands", 10)
    ros_utils.wait_for(lambda: joint_cmd.get_subscription_count() > 0
                       and array_cmd.get_subscription_count() > 0, timeout=10.0)
    bad = [
        JointState(name=["joint1", "joint2", "nope"], effort=[1.0, 2.0, 3.0]),  # unknown
        JointState(name=["joint1", "joint2"], effort=[1.0, math.nan]),  # NaN
        JointState(name=["joint1"], effort=[1.0]),                      # missing joint
        JointState(name=["joint1", "joint2"], effort=[1.0]),            # wrong length
    ]
    for _ in range(3):
        for msg in bad:
            joint_cmd.publish(msg)
        array_cmd.publish(Float64MultiArray(data=[1.0, 2.0, 3.0]))       # wrong length
        array_cmd.publish(Float64MultiArray(data=[math.inf, 0.0]))       # non-finite
    # Every kind is rejected and named in the log; the node stays alive, keeps publishing,
    # and applied none of them.
    expected = ("nope", "missing joints 'joint2'", "nan", "expected 2 values",
                "non-finite effort for joint1")
    ros_utils.wait_for(
        lambda: all(t in ros_utils.read_log(proc) for t in expected)
        or ros_utils.assert_running(proc), timeout=10.0,
        message=f"not all of {expected} logged (the log is printed at teardown)")
    later = ros_utils.collect_messages(ros_node, JointState, "joint_states", 20, timeout=10.0)
    ros_utils.assert_running(proc)
    assert all(list(m.effort) == [0.0, 0.0] for m in later)

    # A good command (array form) is applied, and clipped to the URDF effort limits.
    ros_utils.publish_until(
        ros_node, Float64MultiArray, "arm_simulator/commands",
        lambda: Float64MultiArray(data=[3.0, 100.0]),
        until=lambda: _effort_seen(ros_node, [3.0, 20.0]),
        timeout=10.0)
    # By name, in any order.
    ros_utils.publish_until(
        ros_node, JointState, "effort_command",
        lambda: JointState(name=["joint2", "joint1"], effort=[-1.0, 2.5]),
        until=lambda: _effort_seen(ros_node, [2.5, -1.0]),
        timeout=10.0)
    # Commands stop -> after command_timeout the torque is zero again.
    ros_utils.wait_for_message(ros_node, JointState, "joint_states", timeout=5.0,
                               predicate=lambda m: list(m.effort) == [0.0, 0.0])
    ros_utils.assert_running(proc)


def _set(ros_node, **values):
    request = SetParameters.Request(
        parameters=[Parameter(k, value=v).to_parameter_msg() for k, v in values.items()])
    response = ros_utils.call_service(ros_node, SetParameters, "arm_simulator/set_parameters",
                                      request)
    return [r.successful for r in response.results], [r.reason for r in response.results]


def test_parameters_are_validated_and_reset_works(node_process, ros_node):
    proc = _start(node_process, ros_node)
    ok, reasons = _set(ros_node, coulomb_friction=[-1.0], integrator="euler",
                       initial_positions=[0.1, 0.2, 0.3], command_joints=["joint3"],
                       coulomb_velocity=0.0)
    assert ok == [False] * 5, reasons
    assert ">= 0" in reasons[0] and "rk4" in reasons[1] and "joint1" in reasons[2]
    ros_utils.assert_running(proc)

    ok, _ = _set(ros_node, paused=True, initial_positions=[0.4, -0.3])
    assert ok == [True, True]
    msg = ros_utils.wait_for_message(
        ros_node, JointState, "joint_states", timeout=5.0,
        predicate=lambda m: np.allclose(m.position, [0.4, -0.3]))
    # Paused: the state stays there.
    later = ros_utils.collect_messages(ros_node, JointState, "joint_states", 20, timeout=5.0)
    assert all(np.allclose(m.position, msg.position) for m in later)


def test_a_state_the_plant_cannot_step_is_logged_and_the_node_lives(node_process, ros_node):
    """The RP arm with its slider at r = 1e300: M = diag(H + m2 r^2, m2) overflows, MuJoCo
    flags the state as unstable (the model plant's core would raise InputError), the
    simulator logs it and resets instead of dying; a sane initial state afterwards
    simulates normally."""
    proc = node_process([SIM, "--ros-args", "-p", "robot:=planar_rp",
                         "-p", "initial_positions:=[0.0, 1.0e300]"])
    ros_utils.wait_for(lambda: "simulation step failed" in ros_utils.read_log(proc),
                       timeout=60.0, message="no 'simulation step failed' in the log")
    ros_utils.assert_running(proc)
    ok, reasons = _set(ros_node, initial_positions=[0.2, 0.3])
    assert ok == [True], reasons
    msgs = ros_utils.collect_messages(ros_node, JointState, "joint_states", 30, timeout=20.0)
    assert all(np.all(np.isfinite(m.position)) and abs(m.position[1]) < 10.0
               for m in msgs[-10:])
    ros_utils.assert_running(proc)


def test_measurement_noise_on_joint_states_while_the_truth_stays_exact(node_process, ros_node):
    """noise_position 0.01 rad: joint_states scatter around the (paused, fixed) true q with
    that standard deviation; ~/external_torques keeps the exact q."""
    _start(node_process, ros_node, "paused:=true", "initial_positions:=[0.4, -0.3]",
           "noise_position:=0.01", "noise_seed:=7")
    msgs = ros_utils.collect_messages(ros_node, JointState, "joint_states", 200, timeout=30.0)
    q = np.array([m.position for m in msgs])
    assert np.all(np.abs(q.mean(axis=0) - [0.4, -0.3]) < 0.004)      # 4 sigma of the mean
    assert np.all(np.abs(q.std(axis=0) - 0.01) < 0.0025)
    truth = ros_utils.wait_for_message(ros_node, JointState, "arm_simulator/external_torques",
                                       timeout=5.0)
    assert list(truth.position) == [0.4, -0.3]
    assert all(list(m.velocity) == [0.0, 0.0] for m in msgs)     # noise_velocity is 0


@pytest.mark.parametrize("param,words", [
    ("publish_rate:=0.0", ["publish_rate"]),
    ("plant:=bullet", ["plant", "mujoco"]),
    ("initial_positions:=[0.1]", ["initial_positions", "2 values"]),
])
def test_a_bad_start_up_value_stops_the_node_with_its_name(node_process, param, words):
    proc = node_process([SIM, "--ros-args", "-p", "robot:=planar_2r", "-p", param])
    assert proc.wait(timeout=60) == 2
    log = ros_utils.read_log(proc)
    assert "cannot start" in log and all(w in log for w in words), log


def test_the_model_plant_is_selectable_and_conserves_energy(node_process, ros_node):
    """plant: model (RK4 on our core, no limits, no contact): the passive frictionless 2R
    conserves energy over the whole 3 s whip (RK4 at 1 kHz, see test_integrator), and it
    refuses external wrenches with a reason."""
    from manip_dynamics_interfaces.srv import ApplyWrench

    _start(node_process, ros_node, "plant:=model", "initial_positions:=[0.0, 0.0]",
           "viscous_friction:=[0.0]", "coulomb_friction:=[0.0]")
    msgs = ros_utils.collect_messages(ros_node, JointState, "joint_states", 300, timeout=60.0)
    e = _energies(RobotModel.from_urdf_file(robots.path("planar_2r")), msgs)
    assert np.ptp([m.position[0] for m in msgs]) > 1.0
    assert np.max(np.abs(e - e[0])) < 1e-5 * 15.3
    response = ros_utils.call_service(
        ros_node, ApplyWrench, "arm_simulator/apply_wrench",
        ApplyWrench.Request(link="link2", force=[1.0, 0.0, 0.0], duration=0.1))
    assert not response.success and "model plant" in response.message


def test_descriptors_publish_the_table(node_process, ros_node):
    """The simulator's table reaches its descriptors: description, read-only, and each
    bounded double's range (which rclpy itself then enforces)."""
    from manip_dynamics.sim.parameters import PARAMETERS

    proc = _start(node_process, ros_node)
    descriptors = ros_utils.assert_descriptors_match_table(ros_node, "arm_simulator",
                                                           PARAMETERS)
    assert any(d.floating_point_range for d in descriptors)
    ok, reasons = _set(ros_node, lockstep_timeout=2e6)
    assert ok == [False] and "range" in reasons[0], reasons      # rclpy's own refusal
    ros_utils.assert_running(proc)


def _variant(tmp_path, name, *edits):
    """planar_2r's URDF with ``edits`` (old, new) applied, written to tmp_path/name.urdf."""
    xml = open(robots.path("planar_2r"), encoding="utf-8").read()
    for old, new in edits:
        assert old in xml
        xml = xml.replace(old, new)
    path = tmp_path / f"{name}.urdf"
    path.write_text(xml)
    return path


LINK2_INERTIA = ('<inertia ixx="0.000375" ixy="0" ixz="0" iyy="0.01618750" iyz="0" '
                 'izz="0.01618750"/>')


@pytest.mark.parametrize("name, edits, words", [
    ("fixed", [('"joint1" type="revolute"', '"joint1" type="fixed"'),
               ('"joint2" type="revolute"', '"joint2" type="fixed"')],
     "no moving joint (revolute, continuous or prismatic; its joints: joint1 (fixed)"),
    ("no_inertia", [(LINK2_INERTIA, '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>')],
     "MuJoCo cannot simulate link 'link2' (moved by joint 'joint2'): it has no mass or no "
     "inertia"),
    ("planar", [('"joint2" type="revolute"', '"joint2" type="planar"')],
     "joint 'joint2' has type 'planar', which is not supported"),
])
def test_a_urdf_the_simulator_cannot_build_is_refused_in_one_line(node_process, tmp_path,
                                                                  name, edits, words):
    """Refused at start (exit 2) with one FATAL line naming the joint or link."""
    path = _variant(tmp_path, name, *edits)
    proc = node_process([SIM, "--ros-args", "-p", f"urdf_file:={path}"])
    assert proc.wait(timeout=120) == 2
    log = ros_utils.read_log(proc)
    fatal = [ln for ln in log.splitlines() if "cannot start" in ln]
    assert len(fatal) == 1 and words in fatal[0], log
    assert "Element name" not in log, log
