"""The closed-loop demo's phases: their table (controller mode, simulated seconds, plant
friction), which ones a scenario plays, the nodes' start parameters, and playing them
one after another through parameter services (run_phases; _run starts the nodes and
the Recorder)."""
from __future__ import annotations

import time

import numpy as np

from .processes import Recorder, _start, _stop


# (name, controller mode, seconds of simulated time, plant damping and friction on)
PHASES = (('released', 'off', 3.0, False), ('gravity', 'gravity', 4.0, False),
          ('tracking', 'computed_torque', 6.0, False),
          ('friction', 'computed_torque', 6.0, True))
# contact phases (robots whose scenario has 'contact'): tracking and pushed, then the
# arm commanded into the obstacle
CONTACT_PHASES = (('pushed', 'computed_torque', 2.5, False),
                  ('obstacle', 'computed_torque', 2.0, False))
CONTACT_PHASE_NAMES = tuple(p[0] for p in CONTACT_PHASES)
TRACKED = ('tracking', 'friction')
TITLES = {'released': '1. released (tau = 0)', 'gravity': '2. gravity compensation',
          'tracking': '3. computed-torque tracking',
          'friction': '4. tracking, plant friction on',
          'pushed': '5. tracking, pushed at the flange',
          'obstacle': '6. upper arm into the obstacle'}
# the dynamics node's observer in the demo: the simulator publishes the torque held over
# the last period (effort timing "held"); K_O = 100 1/s; thresholds 0.2 N*m per joint
OBSERVER = {'observer.effort_timing': 'held', 'observer.gains': '[100.0]',
            'observer.enter_thresholds': '[0.2]'}
K_O = 100.0

def _phase_parameters(q0, model, friction):
    """Simulator parameters of a phase start: paused at q0, plant friction on or off."""
    viscous = model.viscous if friction else np.zeros(model.n)
    coulomb = model.coulomb if friction else np.zeros(model.n)
    return {'paused': True, 'initial_positions': q0,
            'viscous_friction': [float(x) for x in viscous],
            'coulomb_friction': [float(x) for x in coulomb]}


def phases_of(scenario, scale=1.0):
    """The phases the demo plays for a scenario (seconds times ``scale``): the contact
    ones only with 'contact' (the push with a 'force', the obstacle with an
    'obstacle_size'), none the scenario's 'skipped' names."""
    contact = scenario.get('contact', {})
    have = {'pushed': 'force' in contact, 'obstacle': 'obstacle_size' in contact}
    return tuple((name, mode, seconds * scale, friction)
                 for name, mode, seconds, friction in PHASES + CONTACT_PHASES
                 if have.get(name, True) and name not in scenario.get('skipped', {}))


def played(scenario, names):
    """The names of ``names`` the demo plays for ``scenario``."""
    keep = {p[0] for p in phases_of(scenario)}
    return [n for n in names if n in keep]


def run_phases(rec, scenario, procs, model, scale=1.0):
    q0 = [float(v) for v in scenario['q0']]
    phases = phases_of(scenario, scale)

    def alive():
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f'{p.demo_name} exited with code {p.returncode}')

    def n_states():
        with rec.lock:
            return len(rec.joint_states)

    for name, mode, seconds, friction in phases:
        alive()
        contact = scenario.get('contact', {})
        start_q = q0
        if name == 'obstacle':
            start_q = [a + b for a, b in zip(q0, contact['start_offset'])]
        # Freeze the arm at the start pose, let the loop settle on it, then release.
        rec.set_parameters(rec.sim_params, _phase_parameters(start_q, model, friction))
        rec.set_parameters(rec.ctl_params, {'mode': 'off' if mode == 'off' else 'gravity'})
        time.sleep(0.3)
        rec.phase = name
        rec.set_parameters(rec.sim_params, {'paused': False})
        if mode == 'computed_torque':
            # Set after the release so the reference clock starts with the motion.
            rec.set_parameters(rec.ctl_params, _reference(name, q0, scenario))
        start = n_states()
        # The paused arm was held by the pause, which the observer saw as external:
        # reset it once states of the released arm flow (not on a paused state still
        # in the pipeline).
        rec.wait(lambda: n_states() - start >= 5, 30, 'the released arm')
        rec.call(rec.reset_client, rec.Trigger.Request())
        count = int(seconds * 100)
        if name == 'pushed':
            rec.wait(lambda: n_states() - start >= int(contact['push_at'] * scale * 100), 30,
                     'the start of the push')
            rec.call(rec.wrench_client, rec.ApplyWrench.Request(
                link=contact['link'], force=contact['force'], torque=[0.0] * 3,
                point=contact['point'], duration=contact['push_for'] * scale),
                resend_every=None)
            # The push starts when the simulator takes the request: later than push_at by
            # the call's wall time times the real-time factor. Record its whole duration
            # and 0.5 s after it whatever that delay was (analysis.contact_numbers judges
            # the push over its duration).
            count = max(count, n_states() - start + int(contact['push_for'] * scale * 100) + 50)
        rec.wait(lambda: n_states() - start >= count, count / 100 * 4 + 10,
                 f'{count / 100:g} s of joint_states in phase {name}')
        alive()
        rec.phase = None
    rec.set_parameters(rec.ctl_params, {'mode': 'gravity'})


def _reference(name, q0, scenario):
    """The controller's parameters of a computed-torque phase. An arm of --urdf tracks
    with its scenario's gains and steps into the obstacle with the Panda's (kp 100, kd 20:
    the step's torque M kp dq stays within small arms' effort limits)."""
    gains = {}
    if 'kp' in scenario:
        gains = ({'kp': [100.0], 'kd': [20.0]} if name == 'obstacle' else
                 {'kp': [scenario['kp']], 'kd': [scenario['kd']]})
    if name == 'obstacle':
        home = [a + b for a, b in zip(q0, scenario['contact']['home_offset'])]
        return {'home': home, 'amplitude': [0.0], 'mode': 'computed_torque', **gains}
    return {'home': q0, 'amplitude': [float(a) for a in scenario['amplitude']],
            'frequency': [float(f) for f in scenario['frequency']], 'mode': 'computed_torque',
            **gains}

def _start_nodes(args, q0, log_dir, scenario):
    sim = {'robot': args.robot, 'initial_positions': q0, 'paused': 'true',
           'real_time_factor': repr(float(args.real_time_factor)),
           'viscous_friction': '[0.0]', 'coulomb_friction': '[0.0]', 'lockstep': 'true',
           'lockstep_timeout': '2.0', 'floor_height': repr(float(scenario['floor_height'])),
           # a controller late on a loaded machine must not make the plant drop the arm
           'command_timeout': '5.0'}
    contact = scenario.get('contact')
    if contact and 'obstacle_size' in contact:
        sim.update(obstacle_size=str(contact['obstacle_size']),
                   obstacle_position=str(contact['obstacle_position']))
    observer, controller = dict(OBSERVER), {'mode': 'gravity'}
    if 'thresholds' in scenario:               # an arm of --urdf: sized from its model
        sim['urdf_file'] = str(args.urdf_file)
        controller.update(kp=f"[{scenario['kp']!r}]", kd=f"[{scenario['kd']!r}]")
        sim['collision_radius'] = repr(scenario['collision_radius'])
        observer['observer.enter_thresholds'] = str(scenario['thresholds'])
        observer['tip_link'] = scenario['tip']
    return [
        _start('manip_dynamics.nodes.arm_simulator', sim, log_dir, 'arm_simulator'),
        _start('manip_dynamics.nodes.dynamics_node', observer, log_dir, 'dynamics_node'),
        _start('manip_dynamics.nodes.computed_torque_controller', controller,
               log_dir, 'computed_torque_controller'),
    ]


def _run(args, scenario, model, log_dir):
    """Start the nodes, wait until the loop runs, play the phases; the Recorder."""
    q0 = '[' + ', '.join(repr(float(v)) for v in scenario['q0']) + ']'
    procs = _start_nodes(args, q0, log_dir, scenario)
    rec = None
    try:
        rec = Recorder()
        rec.wait_until_running(procs, log_dir, 180.0)   # imports on a loaded machine
        rec.t_ready = time.monotonic()
        run_phases(rec, scenario, procs, model, args.time_scale)
    finally:
        if rec is not None:
            rec.close()
        for p in reversed(procs):
            _stop(p)
    return rec
