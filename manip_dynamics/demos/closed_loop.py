"""Closed-loop demo (``make demo``): MuJoCo plant + dynamics node + computed-torque controller.

Three real ROS 2 processes talk over DDS on loopback (``ROS_AUTOMATIC_DISCOVERY_RANGE=
LOCALHOST``; ``ROS_DOMAIN_ID`` kept from the environment, else chosen from the process id):

    arm_simulator --joint_states, robot_description--> dynamics_node --~/dynamics-->
    computed_torque_controller --effort_command--> arm_simulator

The simulator's plant is MuJoCo compiled from the same URDF (joint limits, effort-limited
motors, capsules on a floor); the controller's model is the dynamics node's (our core).
This process records the traffic and switches phases through parameter services (the
simulator's ``paused`` / ``initial_positions`` reset and friction, the controller's
``mode``):

    1. released  mode off: zero torque; the arm falls onto the floor and its joint limits
    2. gravity   tau = g(q) from our core holds the pose in MuJoCo: the drift measures our
                 g against an independent engine
    3. tracking  computed torque on a sinusoidal reference around the start pose
    4. friction  the same tracking with the plant's URDF damping and friction loss on,
                 which the controller's model does not know: it shows in the error

    5. pushed    (Panda) tracking; after 1 s ``arm_simulator/apply_wrench`` pushes the
                 flange for 1 s: the dynamics node's observer (``~/external_torques``,
                 ``~/contact``) against the truth topic
    6. obstacle  (Panda) computed torque drives the shoulder back: the upper arm runs into
                 a box behind it (the simulator's obstacle)

Phases 1-3, 5, 6 have damping and friction off in the plant. It prints a table, writes
``summary.json``, ``closed_loop.png`` (angles, errors, torques per phase),
``inertia_ellipsoids.png`` (the tip's translational effective inertia along the tracked
motion, from ``~/dynamics``), ``contact.png`` (true against estimated external joint
torques of phases 5-6) and, where offscreen rendering works (EGL, see
docs/simulation.md), ``arm_phases.png`` and ``arm_demo.gif`` (the arm itself, rendered by
MuJoCo from the recorded states) into ``demo_output/``.

Run: ``python -m manip_dynamics.demo [--robot panda|planar_2r] [--output demo_output]
[--no-render]``.

Your arm: ``--urdf PATH`` (URDF or xacro; ``--xacro-arg name:=value``, ``--package-path
DIR`` for ``$(find pkg)`` and ``package://``; ``--tip LINK``): the same phases, with the
start pose, reference, gains, observer thresholds, push, obstacle, floor and camera chosen
from the model (:mod:`.scenario`); a phase the arm cannot play is skipped
and the reason printed. An arm it cannot play at all (a URDF or xacro that does not load,
the xacro extra missing, no moving joint, a moving link without mass or inertia) is
refused before any node starts: one ``error:`` line on stderr, exit status 2. The pictures show the URDF's visuals when all are found, else the
capsules (one line says which). ``--time-scale`` shortens every phase,
``--real-time-factor`` speeds up the lockstep simulator, ``--no-plots`` writes no figure.

``summary.json`` (stable keys; rad, s, N*m, ms): ``robot``, ``joint_names``, ``tip_frame``;
per played phase ``released`` / ``gravity`` / ``tracking`` / ``friction``:
``max_deviation_rad`` (max |q - q0|: the drift of the gravity hold), ``duration_s``,
``peak_torque``; ``tracking`` and ``friction`` also ``rms_error_rad``, ``max_error_rad``,
``rms_error_per_joint``; ``contact`` (when a contact phase was played): ``tracking``
(``false_detections``, ``peak_residual``), ``pushed`` / ``obstacle`` (``detection_ms``,
``isolated_link``, ``true_link``, ``error_vs_filtered``, ``error_vs_truth``). With
``--urdf`` also ``urdf``, ``skipped`` {phase: why} and ``scenario`` (the chosen ``kp``,
``kd``, ``thresholds``, ``floor_height``, ``collision_radius``, ``reach_m``, push and box).
``safety`` (tracking played): ISO/TS 15066 for hands and fingers along the tracked motion,
with ``safety_along_motion.png`` (keys: manip_dynamics/demos/safety.py).

Pieces (the same for the embedded robots and for ``--urdf``): :mod:`.processes` (the nodes
as processes, the Recorder), :mod:`.phases` (the phase table and playing it),
:mod:`.analysis` (numbers and tables), :mod:`.plots` (figures and MuJoCo pictures); here:
the embedded robots' scenarios, the command line and ``main``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

from .processes import _ros_environment, require_parts
from .phases import CONTACT_PHASE_NAMES, _run, played
from .analysis import analyse, contact_numbers, print_contact_table, print_table, save_recording
from .plots import plot_closed_loop, plot_contact, plot_ellipsoids, render_pictures
from .safety import add_safety

# Start pose, tracking reference (rad) and camera per robot. Panda: Franka's "ready" pose.
# The planar 2R hangs from its root at z = 0: its floor is put 1.2 m below.
SCENARIOS = {
    'panda': dict(
        q0=[0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
        amplitude=[0.25, 0.2, 0.25, 0.3, 0.3, 0.3, 0.4],
        frequency=[0.3, 0.35, 0.3, 0.4, 0.45, 0.4, 0.5],
        floor_height=0.0, camera=dict(lookat=(0.15, 0.0, 0.5), distance=2.2, azimuth=135.0,
                                       elevation=-15.0),
        # contact phases: a push at a point of the flange link (off joint 7's axis) while
        # tracking; an obstacle box behind the upper arm, which the arm runs into when
        # commanded from start_offset to home_offset (added to q0)
        contact=dict(link='panda_link7', force=[20.0, -10.0, 6.0], point=[0.03, 0.03, 0.05],
                     push_at=1.0, push_for=1.0,
                     obstacle_size=[0.04, 0.06, 0.04], obstacle_position=[-0.195, 0.0, 0.36],
                     start_offset=[0.0, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0],
                     home_offset=[0.0, -0.5, 0.0, 0.0, 0.0, 0.0, 0.0]),
    ),
    'planar_2r': dict(
        q0=[0.3, 0.6],
        amplitude=[0.3, 0.4],
        frequency=[0.3, 0.4],
        floor_height=-1.2, camera=dict(lookat=(0.2, 0.0, -0.3), distance=2.6, azimuth=90.0,
                                       elevation=-5.0),
    ),
}

def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--robot', default='panda', choices=sorted(SCENARIOS))
    parser.add_argument('--urdf', default=None, metavar='PATH',
                        help='your arm: a URDF or xacro file (instead of --robot); pose, '
                             'reference, push, obstacle and thresholds chosen from its model')
    parser.add_argument('--tip', default=None, help="task frame (default: the model's tip)")
    from manip_dynamics.core.dynamics.description import add_arguments
    add_arguments(parser)   # --xacro-arg, --package-path
    parser.add_argument('--time-scale', type=float, default=1.0,
                        help='every phase lasts this times its usual simulated time')
    parser.add_argument('--real-time-factor', type=float, default=1.0,
                        help="the simulator's simulated seconds per wall second (lockstep: "
                             "at most as fast as the loop answers)")
    parser.add_argument('--output', default='demo_output')
    parser.add_argument('--no-render', action='store_true', help='skip the MuJoCo pictures')
    parser.add_argument('--no-plots', action='store_true',
                        help='no figures at all (implies --no-render): the numbers only')
    return parser


def _refuse(message):
    """The demo cannot run on this arm: ``error: <message>`` (one line) and exit status 2."""
    print(f'error: {message}', file=sys.stderr)
    sys.exit(2)


def _user_arm(args):
    """(RobotModel, URDF text) of --urdf, which the simulator can build; otherwise exit
    with one line (:func:`_refuse`): a URDF or xacro that does not load (URDFError, the
    xacro extra missing), or one the simulator refuses at start (no moving joint, a moving
    link without mass or inertia: sim.plants.build_plant's one-line ValueError). The
    core's warnings about the model (massless joints, inertias kept as written) follow as
    one ``warning:`` line each when the demo goes on."""
    from manip_dynamics.core.errors import ManipDynamicsError
    from manip_dynamics.sim.plants import build_plant, load_robot
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            model, urdf_xml = load_robot('', args.urdf, args.xacro_arg, args.package_path)
    except ManipDynamicsError as exc:
        _refuse(exc if args.urdf in str(exc) else f'{args.urdf}: {exc}')
    try:
        build_plant(urdf_xml, model, {'plant': 'mujoco'}, 0.001)
    except ValueError as exc:
        _refuse(f'{args.urdf}: {exc}')
    for warning in caught:
        print(f'warning: {warning.message}', file=sys.stderr)
    return model, urdf_xml


def _robot(args, out_dir):
    """(robot name, RobotModel, URDF text, scenario, tip) of --robot or --urdf."""
    from manip_dynamics.sim.plants import load_robot
    args.urdf_file = None
    if not args.urdf:
        model, urdf_xml = load_robot(args.robot, '')
        return args.robot, model, urdf_xml, SCENARIOS[args.robot], model.default_tip
    from manip_dynamics.demos.scenario import scenario_for
    model, urdf_xml = _user_arm(args)
    tip = args.tip or model.default_tip
    if tip not in model.frame_names:
        _refuse(f'--tip: no link {tip!r} in {args.urdf} (links: '
                f'{", ".join(model.frame_names)})')
    args.urdf_file = (out_dir / 'robot.urdf').resolve()    # the expanded description
    args.urdf_file.write_text(urdf_xml, encoding='utf-8')
    scenario = dict(scenario_for(model, tip, urdf_xml), tip=tip)
    for phase, why in scenario['skipped'].items():
        print(f'skipping phase {phase}: {why}')
    name = Path(args.urdf).name.split('.')[0]
    return name, model, urdf_xml, scenario, tip


def _figures(args, rec, model, urdf_xml, scenario, tip, out_dir, summary, series, tracked):
    """The figures (none with --no-plots); the written paths."""
    names = list(model.joint_names)
    if args.no_plots:
        return []
    plot_closed_loop(series, names, out_dir / 'closed_loop.png')
    written = [out_dir / 'closed_loop.png']
    if tracked:                                # the tracking phase was played
        summary['ellipsoid_eigenvalues_kg'] = plot_ellipsoids(
            tracked, model, tip, out_dir / 'inertia_ellipsoids.png')
        written.append(out_dir / 'inertia_ellipsoids.png')
    if summary.get('contact'):
        plot_contact(summary['contact_series'], summary['contact'], names,
                     out_dir / 'contact.png')
        written.append(out_dir / 'contact.png')
    if not args.no_render:
        visuals = (dict(package_paths=args.package_path,
                        base_dir=Path(args.urdf).resolve().parent) if args.urdf else None)
        written += render_pictures(rec, urdf_xml, model, scenario, out_dir, visuals=visuals)
    return written


def main(argv=None):
    args = _parser().parse_args(argv)
    require_parts('python -m manip_dynamics.demo', 'mujoco', 'matplotlib', 'PIL')
    _ros_environment()
    t_start = time.monotonic()

    import manip_dynamics.sim  # noqa: F401  first: selects MUJOCO_GL=egl
    import mujoco  # noqa: E402  (after manip_dynamics.sim on purpose)

    out_dir = Path(args.output)
    log_dir = out_dir / 'logs'
    log_dir.mkdir(parents=True, exist_ok=True)
    robot, model, urdf_xml, scenario, tip = _robot(args, out_dir)
    names = list(model.joint_names)
    rec = _run(args, scenario, model, log_dir)
    t_ready = rec.t_ready - t_start

    summary, series, tracked = analyse(rec, model, scenario, tip)
    save_recording(rec, out_dir / 'recording.npz')
    summary.update(robot=robot, joint_names=names, tip_frame=tip,
                   mujoco_version=mujoco.__version__,
                   ros_domain_id=int(os.environ['ROS_DOMAIN_ID']),
                   start_pose=scenario['q0'], amplitude=scenario['amplitude'],
                   frequency_hz=scenario['frequency'], startup_s=round(t_ready, 2))
    if args.urdf:
        summary.update(urdf=str(args.urdf), skipped=scenario['skipped'], scenario={
            k: scenario[k] for k in ('kp', 'kd', 'gravity_frequency', 'floor_height',
                                     'collision_radius', 'thresholds',
                                     'reach_m', 'torque_scale', 'contact')})
    if played(scenario, CONTACT_PHASE_NAMES):
        summary['contact'], summary['contact_series'] = contact_numbers(
            rec, model, scenario, args.time_scale)
    written = _figures(args, rec, model, urdf_xml, scenario, tip, out_dir, summary, series,
                       tracked)
    written += add_safety(summary, rec, model, tip, out_dir, plots=not args.no_plots)
    summary.pop('contact_series', None)
    summary['pictures'] = [p.name for p in written]
    summary['wall_time_s'] = round(time.monotonic() - t_start, 2)
    (out_dir / 'summary.json').write_text(json.dumps(summary, indent=2))
    print_table(summary, names)
    if 'contact' in summary:
        print_contact_table(summary['contact'], '0.2 N*m' if not args.urdf else
                            '1 % of each joint\'s torque scale')
    for phase, why in summary.get('skipped', {}).items():
        print(f'skipped phase {phase}: {why}')
    print(f"wrote {', '.join(str(p) for p in written + [out_dir / 'summary.json'])} in "
          f"{summary['wall_time_s']:.1f} s (startup {t_ready:.1f} s)")
    return 0


if __name__ == '__main__':
    sys.exit(main())
