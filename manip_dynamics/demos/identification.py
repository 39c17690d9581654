"""Identification demo (``make demo-identification``): from the URDF to the simulated arm.

The MuJoCo plant's true link masses and centres of mass differ from the URDF by 10-30%
(fixed factors below) and it carries a 1 kg payload on the flange that nobody tells the
dynamics node about. Four real ROS 2 processes on loopback (arm_simulator, dynamics_node,
computed_torque_controller, recorder) and this one:

    1. before      controller mode gravity (tau = g(q) of the node's URDF model): the arm,
                   released at rest at the hold pose, drifts (4 s)
    2. excitation  controller mode excitation plays an optimised finite Fourier series
                   (core/identification/excitation.py, one 10 s period); the recorder writes
                   joint_states (with effort) to an MCAP file
    3. identify    ``python -m manip_dynamics.identify run.mcap --urdf panda.urdf --out
                   identified.urdf`` (physically consistent fit: the semidefinite program
                   of core/identification/consistent_fit.py; friction identified). The table prints
                   the held-out torque error of the unconstrained and of the consistent fit
                   side by side, and the solver's optimality gap
    4. after       the dynamics node's ``robot_description`` parameter set to the
                   identified URDF; the same hold as phase 1 (4 s)
    5. after, no friction: phase 4 with the plant's joint friction off

The plant keeps its URDF joint friction (MuJoCo friction loss) except in phase 5, as a real
arm would: phase 5 shows what is left when nothing hides a small torque error. Besides the
drift, the table gives the g(q) error against the plant's true gravity torque (MuJoCo's
``qfrc_bias`` at rest, over 200 random poses) for the URDF and the identified model.

Writes ``demo_output/identification/``: ``summary.json``, ``run.mcap``, ``excitation.json``,
``identified.urdf`` (+ its report and torque plot), ``identification.png``.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from manip_dynamics.demos.processes import Recorder, _ros_environment, _start, _stop, require_parts

# The plant's truth (documented in the README): per-link factors of mass and of the CoM
# offset, magnitudes 10-30%, signs mixed; a payload on the flange.
MASS_FACTORS = [0.79, 1.25, 0.86, 1.18, 0.72, 1.14, 1.27]
COM_FACTORS = [1.21, 0.83, 1.29, 0.76, 1.12, 0.88, 1.16]
PAYLOAD = dict(link='panda_link8', mass=1.0, com=[0.02, -0.01, 0.06])
Q_HOLD = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]      # Franka's "ready" pose
HOLD_SECONDS = 4.0
RATE = 100.0                                                 # simulator publish rate, Hz


def _fmt(v):
    return '[' + ', '.join(repr(float(x)) for x in v) + ']'


def _plant_values(friction=True):
    values = dict(plant='mujoco', floor=False, mass_factors=MASS_FACTORS,
                  com_factors=COM_FACTORS, payload_link=PAYLOAD['link'],
                  payload_mass=PAYLOAD['mass'], payload_com=PAYLOAD['com'])
    if not friction:
        values.update(viscous_friction=[0.0], coulomb_friction=[0.0])
    return values


def _start_nodes(log_dir, excitation_file, real_time_factor=1.0):
    sim = {k: (_fmt(v) if isinstance(v, list) else v) for k, v in _plant_values().items()
           if k not in ('plant', 'floor')}
    sim.update(robot='panda', floor='false', paused='true', initial_positions=_fmt(Q_HOLD),
               lockstep='true', lockstep_timeout='5.0', command_timeout='5.0',
               publish_rate=repr(RATE), real_time_factor=repr(float(real_time_factor)))
    return [_start('manip_dynamics.nodes.arm_simulator', sim, log_dir, 'arm_simulator'),
            _start('manip_dynamics.nodes.dynamics_node',
                   {'outputs.inertia_markers.enabled': 'false'}, log_dir, 'dynamics_node'),
            _start('manip_dynamics.nodes.computed_torque_controller',
                   {'mode': 'gravity', 'excitation_file': str(excitation_file)},
                   log_dir, 'computed_torque_controller')]


def _states_since(rec, count):
    with rec.lock:
        return len(rec.joint_states) - count


def hold(rec, name, friction):
    """Phase: arm at rest at Q_HOLD, controller tau = g(q), HOLD_SECONDS of joint_states."""
    rec.set_parameters(rec.sim_params, {'paused': True, 'initial_positions': Q_HOLD,
                                        **_friction(friction)})
    rec.set_parameters(rec.ctl_params, {'mode': 'gravity'})
    time.sleep(0.3)
    with rec.lock:
        start = len(rec.joint_states)
    rec.phase = name
    rec.set_parameters(rec.sim_params, {'paused': False})
    rec.wait(lambda: _states_since(rec, start) >= HOLD_SECONDS * RATE, 60.0, f'phase {name}')
    rec.phase = None


def _friction(on):
    """The simulator's friction parameters: the URDF's (on) or zero."""
    from manip_dynamics import RobotModel
    from manip_dynamics.robots import path
    model = RobotModel.from_urdf_file(path('panda'))
    return {'viscous_friction': [float(x) for x in (model.viscous if on else np.zeros(7))],
            'coulomb_friction': [float(x) for x in (model.coulomb if on else np.zeros(7))]}


def excite(rec, trajectory, out_dir, log_dir):
    """Phase 2: recorder on, controller mode excitation from q(0) for one period."""
    q0 = [float(x) for x in trajectory.sample(0.0)[0][0]]
    rec.set_parameters(rec.sim_params, {'paused': True, 'initial_positions': q0,
                                        **_friction(True)})
    bag = out_dir / 'run.mcap'
    bag.unlink(missing_ok=True)           # the recorder creates it at its first message
    recorder = _start('manip_dynamics.nodes.recorder',
                      {'output': str(bag), 'overwrite': 'true', 'reliability': 'reliable'},
                      log_dir, 'recorder')
    rec.wait(lambda: rec.node.count_subscribers('joint_states') >= 3, 60.0,
             'the recorder subscription')
    from std_srvs.srv import Trigger
    stop_client = rec.node.create_client(Trigger, 'recorder/stop')   # early: see rec.call
    # The graph shows the recorder's subscription before the simulator's publisher has
    # matched it (CI: a loaded machine lost the first 1.4 s of the excitation): wait for
    # the recorder's first message (the paused simulator keeps publishing), then a little.
    rec.wait(bag.exists, 60.0, "the recorder's first joint_states message")
    time.sleep(0.5)
    with rec.lock:
        start = len(rec.joint_states)
    rec.phase = 'excitation'
    rec.set_parameters(rec.ctl_params, {'mode': 'excitation'})
    rec.set_parameters(rec.sim_params, {'paused': False})
    rec.wait(lambda: _states_since(rec, start) >= (trajectory.duration + 0.5) * RATE,
             10 * trajectory.duration + 60, 'the excitation run')
    rec.set_parameters(rec.ctl_params, {'mode': 'gravity'})
    rec.phase = None
    print(f'recorder: {rec.call(stop_client, Trigger.Request(), 30.0, resend_every=None).message}')
    _stop(recorder)
    return bag


def identify(bag, urdf, out_dir, log_dir):
    """Phase 3: the CLI in its own process; -> (identified URDF text, report dict)."""
    out = out_dir / 'identified.urdf'
    cmd = [sys.executable, '-m', 'manip_dynamics.identify', str(bag), '--urdf', str(urdf),
           '--out', str(out), '--effort-delay', repr(0.5 / RATE),
           '--plot', str(out_dir / 'identified.torques.png'),
           '--no-armature']   # the plant has no rotors, the node takes the URDF alone
                              # (robot_description: no side file beside it)
    with open(log_dir / 'identify.log', 'wb') as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT, timeout=600)
    report = json.loads((out_dir / 'identified.report.json').read_text())
    return out.read_text(), report


def use_description(rec, xml, model_identified):
    """Phase 4 set-up: the node takes the identified URDF; checked through its service."""
    from rclpy.parameter_client import AsyncParameterClient
    from manip_dynamics_interfaces.srv import GetGravityTorques
    node_params = AsyncParameterClient(rec.node, 'dynamics_node')
    # a new client: re-sent until answered (see Recorder.call); the same description twice
    # is harmless
    rec.set_parameters(node_params, {'robot_description': xml}, resend_every=2.0)
    client = rec.node.create_client(GetGravityTorques, 'dynamics_node/get_gravity_torques')
    g_node = np.array(rec.call(client, GetGravityTorques.Request(position=Q_HOLD), 30.0).effort)
    g_core = model_identified.gravity_torques(np.array(Q_HOLD))
    if not np.allclose(g_node, g_core, atol=1e-9):
        raise RuntimeError(f'the node did not take the identified description: g {g_node} '
                           f'!= {g_core}')


def drift(rec, name):
    """(max over joints and time of |q - Q_HOLD| rad, per joint, t (s), q - Q_HOLD)."""
    with rec.lock:
        rows = [(s[1], s[2]) for s in rec.joint_states if s[0] == name]
    t = np.array([r[0] for r in rows])
    dq = np.array([r[1] for r in rows]) - np.array(Q_HOLD)
    per_joint = np.abs(dq).max(axis=0)
    return float(per_joint.max()), per_joint, t - t[0], dq


def gravity_errors(model_urdf, model_identified, xml, count=200):
    """RMS over random poses of g_model(q) - g_true(q) per joint; g_true = MuJoCo's
    qfrc_bias of the perturbed plant at rest (an independent engine)."""
    import mujoco
    from manip_dynamics.sim.plants import build_plant
    plant = build_plant(xml, model_urdf, _plant_values(), 1e-3)
    qs = np.random.default_rng(5).uniform(model_urdf.position_lower,
                                          model_urdf.position_upper, (count, model_urdf.n))
    g_true = []
    for q in qs:
        plant.reset(q)
        mujoco.mj_forward(plant.m, plant.d)
        g_true.append(plant.d.qfrc_bias[plant.dadr].copy())
    g_true = np.array(g_true)
    rms = lambda m: np.sqrt(np.mean((m.gravity_torques(qs) - g_true) ** 2, axis=0))
    return rms(model_urdf), rms(model_identified)


def _run(out_dir, log_dir, trajectory_file, trajectory, urdf, real_time_factor=1.0):
    """Phases 1-5 with the nodes up; -> (Recorder, identified xml, report)."""
    from manip_dynamics import RobotModel
    procs = _start_nodes(log_dir, trajectory_file, real_time_factor)
    rec = None
    try:
        rec = Recorder()
        rec.wait_until_running(procs, log_dir, 90.0)
        hold(rec, 'before', friction=True)
        bag = excite(rec, trajectory, out_dir, log_dir)
        print('identifying (python -m manip_dynamics.identify) ...', flush=True)
        xml, report = identify(bag, urdf, out_dir, log_dir)
        use_description(rec, xml, RobotModel.from_urdf_string(xml))
        hold(rec, 'after', friction=True)
        hold(rec, 'after_no_friction', friction=False)
    finally:
        if rec is not None:
            rec.close()
        for p in reversed(procs):
            _stop(p)
    return rec, xml, report


PHASE_TITLES = {'before': 'URDF model, plant friction on',
                'after': 'identified model, plant friction on',
                'after_no_friction': 'identified model, plant friction off'}


def plot(drifts, report, path):
    """q - q_hold of the three holds and the held-out RMS torque errors per joint."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5))
    for ax, (name, (_, _, t, dq)) in zip(axes, drifts.items()):
        ax.plot(t, dq)
        ax.set_title(f'gravity hold: {PHASE_TITLES[name]}', fontsize=10)
        ax.set_xlabel('time (s)')
        ax.set_ylabel('q - q_hold (rad)')
        ax.grid(True, alpha=0.3)
    axes[0].legend([f'joint {j + 1}' for j in range(7)], fontsize=7)
    x = np.arange(len(report['rms_before']))
    axes[3].bar(x - 0.2, report['rms_before'], 0.4, label='URDF')
    axes[3].bar(x + 0.2, report['rms_after'], 0.4, label='identified')
    axes[3].set_yscale('log')
    axes[3].set_xticks(x, [f'j{j + 1}' for j in x])
    axes[3].set_ylabel('held-out RMS torque error (N*m)')
    axes[3].set_title('torque prediction on held-out data', fontsize=10)
    axes[3].legend()
    axes[3].grid(True, alpha=0.3, axis='y')
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def print_table(summary):
    d, g = summary['drift_rad'], summary['gravity_error_rms']
    print()
    print(f"identification demo: Panda on MuJoCo, masses x {MASS_FACTORS}, CoM offsets x "
          f"{COM_FACTORS}, unknown payload {PAYLOAD['mass']} kg at {PAYLOAD['com']} m on "
          f"{PAYLOAD['link']}")
    print(f"{'gravity hold, 4 s':<44} {'drift rad':>10}  per joint")
    for name in ('before', 'after', 'after_no_friction'):
        print(f"{PHASE_TITLES[name]:<44} {d[name]['max']:10.2e}  "
              f"{np.round(d[name]['per_joint'], 4).tolist()}")
    print(f"drift ratio (friction on): {summary['drift_ratio']:.0f}x")
    print(f"g(q) error vs MuJoCo's true g, RMS over 200 poses (N*m): URDF "
          f"{np.round(g['urdf'], 3).tolist()}")
    print(f"{'':<61}identified {np.round(g['identified'], 4).tolist()}")
    rep = summary['identification']
    print(f"held-out RMS torque error (N*m): URDF {np.round(rep['rms_before'], 3).tolist()}")
    print(f"{'':<20}unconstrained fit {np.round(rep['rms_unconstrained'], 4).tolist()}")
    print(f"{'':<17}consistent fit (SDP) {np.round(rep['rms_after'], 4).tolist()}  "
          f"(optimality gap {rep['optimality_gap']:.2g}, {rep['solver_status']})")
    print(f"excitation: {summary['excitation']['duration_s']:.0f} s, condition number "
          f"{summary['excitation']['condition_number']:.0f}; identification "
          f"{rep['seconds']:.1f} s; demo "
          f"{summary['wall_time_s']:.0f} s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--output', default='demo_output/identification')
    parser.add_argument('--figure', default=None,
                        help='also save the figure here (e.g. docs/images/identification.png)')
    parser.add_argument('--excitation-iterations', type=int, default=5,
                        help='SLSQP iterations optimising the excitation (default 5; a '
                             'count, not a time, so the run does not depend on the load)')
    parser.add_argument('--real-time-factor', type=float, default=1.0,
                        help="the simulator's simulated seconds per wall second (lockstep: "
                             "at most as fast as the loop answers; the results do not "
                             "depend on it)")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.real_time_factor) and args.real_time_factor > 0):
        parser.error(f'--real-time-factor must be a positive number, got {args.real_time_factor}')
    require_parts('python -m manip_dynamics.demo_identification', 'mujoco', 'matplotlib',
                  'mcap', 'mcap_ros2')
    _ros_environment()
    t_start = time.monotonic()
    import warnings
    from manip_dynamics import MasslessLinkWarning, RobotModel, robots
    warnings.filterwarnings('ignore', category=MasslessLinkWarning)   # the Panda's flange
    from manip_dynamics.core.identification.excitation import optimize_excitation

    out_dir = Path(args.output)
    log_dir = out_dir / 'logs'
    log_dir.mkdir(parents=True, exist_ok=True)
    urdf = Path(robots.path('panda'))
    model = RobotModel.from_urdf_file(urdf)
    print(f'optimising the excitation ({args.excitation_iterations} iterations) ...',
          flush=True)
    trajectory = optimize_excitation(model, base_frequency=0.1, harmonics=5, seed=0,
                                     max_iter=args.excitation_iterations, max_time=300.0)
    trajectory_file = out_dir / 'excitation.json'
    trajectory.save(trajectory_file)
    rec, xml, report = _run(out_dir, log_dir, trajectory_file, trajectory, urdf,
                            args.real_time_factor)
    drifts = {name: drift(rec, name) for name in PHASE_TITLES}
    g_urdf, g_identified = gravity_errors(model, RobotModel.from_urdf_string(xml),
                                          urdf.read_text())
    summary = dict(
        mass_factors=MASS_FACTORS, com_factors=COM_FACTORS, payload=PAYLOAD,
        hold_pose=Q_HOLD, hold_seconds=HOLD_SECONDS,
        excitation=dict(duration_s=trajectory.duration,
                        condition_number=trajectory.condition_number),
        drift_rad={k: dict(max=v[0], per_joint=v[1].tolist()) for k, v in drifts.items()},
        drift_ratio=drifts['before'][0] / max(drifts['after'][0], 1e-300),
        gravity_error_rms=dict(urdf=g_urdf.tolist(), identified=g_identified.tolist()),
        identification={k: report[k] for k in ('rms_before', 'rms_after', 'rms_unconstrained',
                                               'optimality_gap', 'solver_status',
                                               'condition_number', 'fit_samples',
                                               'held_out_samples', 'seconds')})
    figure = out_dir / 'identification.png'
    plot(drifts, report, figure)
    if args.figure:
        plot(drifts, report, args.figure)
    summary['wall_time_s'] = round(time.monotonic() - t_start, 1)
    (out_dir / 'summary.json').write_text(json.dumps(summary, indent=2))
    print_table(summary)
    print(f'wrote {out_dir}/: summary.json, run.mcap, excitation.json, identified.urdf '
          f'(+ report, torque plot), identification.png')
    return 0


if __name__ == '__main__':
    sys.exit(main())
