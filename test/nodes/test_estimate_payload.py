"""~/estimate_payload across processes on the MuJoCo plant, with a payload the node does not
know: arm_simulator (MuJoCo Panda, URDF friction, hidden payload on the flange, lockstep)
-> dynamics_node (nominal URDF from the simulator's robot_description) ->
computed_torque_controller (mode excitation: a short excitation file) -> arm_simulator.

The truth is the simulator's payload parameters; the check after ``apply`` compares the
node's g(q) (~/get_gravity_torques) with the core's g of the URDF plus the TRUE payload."""
import numpy as np
import pytest
import ros_utils
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.identification.excitation import optimize_excitation
from manip_dynamics.rules.excitation_player import LEAD_IN_SPEED
from manip_dynamics_interfaces.srv import EstimatePayload, GetGravityTorques

pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")
MASS, COM = 0.85, [-0.02, 0.015, 0.06]      # the hidden payload on panda_link8
FRAME = "panda_link8"


def _args(module, **params):
    args = [module, "--ros-args"]
    for key, value in params.items():
        args += ["-p", f"{key}:={value}"]
    return args


def _stamp(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def test_estimate_and_apply_unknown_payload(node_process, ros_node, tmp_path):
    model = RobotModel.from_urdf_file(robots.path("panda"))
    # max_iter=0: the random feasible series (seeded), not SLSQP's round-off-dependent path
    trajectory = optimize_excitation(model, base_frequency=0.2, harmonics=3, max_iter=0,
                                     seed=3)
    path = tmp_path / "excitation.json"
    trajectory.save(path)
    q0 = trajectory.sample(0.0)[0][0]
    references, states = [], {}
    ros_node.create_subscription(JointState, "computed_torque_controller/reference",
                                 references.append, 1000)
    ros_node.create_subscription(JointState, "joint_states",
                                 lambda m: states.setdefault(_stamp(m), np.array(m.position)),
                                 1000)
    sim = node_process(_args(
        "manip_dynamics.nodes.arm_simulator", robot="panda", lockstep="true", floor="false",
        lockstep_timeout=5.0, command_timeout=5.0,      # load-independent: wait, never step on
        payload_link=FRAME, payload_mass=MASS, payload_com=str(COM),
        initial_positions=str([float(x) for x in q0])))
    node = node_process(_args("manip_dynamics.nodes.dynamics_node",
                              **{"outputs.inertia_markers.enabled": "false"}))
    ctl = node_process(_args("manip_dynamics.nodes.computed_torque_controller",
                             mode="gravity", excitation_file=str(path)))
    procs = [sim, node, ctl]
    ros_utils.wait_for_message(ros_node, JointState, "effort_command", timeout=90.0,
                               process=procs)
    # bad file refused, the controller goes on; then the excitation from the measured pose
    assert not _set_controller(ros_node, excitation_file=str(tmp_path / "missing.json"))
    assert _set_controller(ros_node, mode="excitation")
    ros_utils.wait_for(lambda: references, timeout=30.0, message="excitation reference")
    # the arm sagged while the nodes started: the lead-in from there to q(0), one period of
    # the excitation, 0.5 s at rest (1 s more: the first reference received may be later)
    first = references[0]
    lead_in = np.abs(q0 - np.array(first.position)).max() / LEAD_IN_SPEED
    ros_utils.wait_for_message(
        ros_node, JointState, "joint_states", timeout=120.0, process=procs,
        predicate=lambda m: _stamp(m) > _stamp(first) + lead_in + trajectory.duration + 1.5)

    _check_excitation_played(trajectory, references, states)

    bad = EstimatePayload.Request(frame=FRAME, duration=-1.0)
    response = ros_utils.call_service(ros_node, EstimatePayload, "/dynamics_node/estimate_payload",
                                      bad, process=procs)
    assert not response.success and "duration" in response.message
    unknown = EstimatePayload.Request(frame="no_such_link")
    response = ros_utils.call_service(ros_node, EstimatePayload, "/dynamics_node/estimate_payload",
                                      unknown, process=procs)
    assert not response.success and "no_such_link" in response.message

    request = EstimatePayload.Request(frame=FRAME, duration=trajectory.duration + 1.5,
                                      effort_delay=0.005, apply=True)
    response = ros_utils.call_service(ros_node, EstimatePayload,
                                      "/dynamics_node/estimate_payload", request,
                                      timeout=60.0, process=procs)
    assert response.success, response.message
    inertia = response.payload.inertia
    com = np.array([inertia.com.x, inertia.com.y, inertia.com.z])
    print(f"mass {inertia.m:.4f} kg (true {MASS}), com {com} (true {COM}), "
          f"{response.states_used} states, residual {np.round(response.residual_rms, 3)}")
    assert abs(inertia.m - MASS) < 0.02 * MASS
    assert np.linalg.norm(com - COM) < 0.005
    assert response.applied, response.message

    # applied: the node's g(q) now carries the payload (the true one, to the estimate's error)
    truth = model.with_payload(FRAME, MASS, COM)
    q = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.2, -0.6])
    g = ros_utils.call_service(ros_node, GetGravityTorques, "/dynamics_node/get_gravity_torques",
                               GetGravityTorques.Request(position=q.tolist()), process=procs)
    assert g.success
    error = np.abs(np.array(g.effort) - truth.gravity_torques(q))
    payload_share = np.abs(truth.gravity_torques(q) - model.gravity_torques(q))
    assert np.linalg.norm(error) < 0.05 * np.linalg.norm(payload_share), (error, payload_share)


def _set_controller(ros_node, **values):
    request = SetParameters.Request(
        parameters=[Parameter(k, value=v).to_parameter_msg() for k, v in values.items()])
    response = ros_utils.call_service(ros_node, SetParameters,
                                      "computed_torque_controller/set_parameters", request)
    return all(r.successful for r in response.results)


def _series_start(trajectory, refs):
    """The stamp c at which the controller started the series (t0 + lead-in), from the
    references alone (a loaded machine may drop some messages, even the first): the
    reference nearest to q(T/2) on the series, then refined by least squares over the
    whole series."""
    import scipy.optimize
    T = trajectory.duration
    base = _stamp(refs[0])          # optimise an offset from it: stamps are ~1.8e9 s
    t = np.array([_stamp(r) for r in refs]) - base
    q_d = np.array([r.position for r in refs])
    mid = trajectory.sample(0.5 * T)[0][0]
    guess = t[np.argmin(np.abs(q_d - mid).max(axis=1))] - 0.5 * T

    def cost(c):
        inside = (t > c + 0.1) & (t < c + T - 0.1)
        return float(np.sum((trajectory.sample(t[inside] - c)[0] - q_d[inside]) ** 2))
    return base + scipy.optimize.minimize_scalar(cost, bounds=(guess - 0.02, guess + 0.02),
                                                 method="bounded", options={"xatol": 1e-10}).x


def _check_excitation_played(trajectory, references, states):
    """The controller's excitation mode: after the lead-in its reference is the file's
    series, then q(0) held, and the arm followed it (computed torque with the node's model,
    which lacks the payload and the plant's friction)."""
    T = trajectory.duration
    references, states = list(references), dict(states)     # the executor still appends
    c = _series_start(trajectory, references)
    t_all = np.array([_stamp(r) for r in references]) - c
    q_all = np.array([r.position for r in references])
    series = (t_all >= 0) & (t_all <= T)
    assert series.sum() > 0.9 * 100 * T                   # a few lost messages at most
    # (the controller's t - t0 comes from float stamps ~1.8e9 s: 2.4e-7 s resolution)
    np.testing.assert_allclose(q_all[series], trajectory.sample(t_all[series])[0], atol=1e-5)
    np.testing.assert_allclose(q_all[t_all > T + 0.02], np.broadcast_to(
        trajectory.sample(0.0)[0][0], q_all[t_all > T + 0.02].shape), atol=1e-12)  # held
    if np.all(np.array(references[0].velocity) == 0.0):   # received from the lead-in's start
        lead_in = np.abs(trajectory.sample(0.0)[0][0] - q_all[0]).max() / LEAD_IN_SPEED
        assert abs(-t_all[0] - lead_in) < 1e-5, (-t_all[0], lead_in)
    refs = [r for r, inside in zip(references, series) if inside and _stamp(r) in states]
    q_d = np.array([r.position for r in refs])
    q = np.array([states[_stamp(r)] for r in refs])
    error = q_d - q
    print(f"excitation tracking error RMS {np.sqrt(np.mean(error ** 2)):.2e} rad, "
          f"max {np.abs(error).max():.2e} rad; range of motion {np.ptp(q_d, axis=0)}")
    # every joint excited and moving; the heavy joints 1-4 follow closely. The plant's dry
    # friction (URDF <dynamics friction>, which neither Dynamics nor the control law
    # carries) costs most on the light wrist (measured RMS error 0.02-0.1 rad on joints
    # 1-4, 0.2-0.7 rad on 5-7)
    spread, moved = np.std(q_d, axis=0), np.std(q, axis=0)
    assert np.all(spread > 0.1) and np.all(moved > 0.3 * spread), (spread, moved)
    rms = np.sqrt(np.mean(error ** 2, axis=0))
    assert np.all(rms[:4] < 0.3 * spread[:4]), (rms, spread)
