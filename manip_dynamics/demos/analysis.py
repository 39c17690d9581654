"""The closed-loop demo's numbers from a recording: per-phase statistics (drift,
tracking error, torques), the contact phases against MuJoCo's truth (detection delay,
isolated link, error against the observer's filtered truth), the raw recording saved,
and the printed tables."""
from __future__ import annotations

import numpy as np

from .phases import CONTACT_PHASES, CONTACT_PHASE_NAMES, K_O, PHASES, TRACKED, played


def _fmt(values):
    return '[' + ', '.join(f'{v:.3f}' for v in values) + ']'

def _phase_numbers(rows, truth, model, q0, tip):
    """Per-phase statistics of the recorded joint_states rows (phase, t, q, qd, tau)."""
    t = np.array([r[1] for r in rows])
    q, qd, tau = (np.array([r[k] for r in rows]) for k in (2, 3, 4))
    dev = np.abs(q - q0)
    tip_z = np.array([model.frame_pose(qi, tip)[2, 3] for qi in q])
    overshoot = np.maximum(model.position_lower - q, q - model.position_upper).max()
    return dict(
        duration_s=float(t[-1] - t[0]), samples=len(t),
        max_deviation_rad=float(dev.max()),
        max_deviation_joint=model.joint_names[int(np.argmax(dev.max(axis=0)))],
        final_deviation_rad=float(dev[-1].max()),
        final_speed_rad_s=float(np.abs(qd[-1]).max()),
        limit_overshoot_rad=float(max(overshoot, 0.0)),
        tip_drop_m=float(tip_z[0] - tip_z.min()),
        peak_torque=[float(x) for x in np.abs(tau).max(axis=0)],
        peak_external_torque=float(max((np.abs(e).max() for e in truth), default=0.0)),
    ), dict(t=t - t[0], q=q, tau=tau, err=q - q0)


def _tracking_numbers(states, refs, name):
    """Reference (stamped with the state it answered) minus that state, per sample."""
    by_stamp = {s[1]: s[2] for s in states if s[0] == name}
    pairs = [(r[1], r[2] - by_stamp[r[1]]) for r in refs if r[0] == name and r[1] in by_stamp]
    err = np.array([p[1] for p in pairs])
    t0 = min(s[1] for s in states if s[0] == name)
    return dict(
        error_samples=len(pairs),
        rms_error_rad=float(np.sqrt(np.mean(err ** 2))),
        max_error_rad=float(np.abs(err).max()),
        rms_error_per_joint=[float(x) for x in np.sqrt(np.mean(err ** 2, axis=0))],
    ), dict(t_err=np.array([p[0] for p in pairs]) - t0, err=err)


def analyse(rec, model, scenario, tip):
    q0 = np.array(scenario['q0'])
    with rec.lock:
        states, refs, dyns = list(rec.joint_states), list(rec.reference), list(rec.dynamics)
        truth = list(rec.truth)
    out, series = {}, {}
    for name in played(scenario, [p[0] for p in PHASES]):
        rows = [s for s in states if s[0] == name]
        out[name], series[name] = _phase_numbers(
            rows, [e for p, _, e in truth if p == name], model, q0, tip)
    for name in played(scenario, TRACKED):
        numbers, curves = _tracking_numbers(states, refs, name)
        out[name].update(numbers)
        series[name].update(curves)
    tracked = [d for d in dyns if d[0] == 'tracking']
    return out, series, tracked


def _by_phase(rows, name):
    """{stamp: row} of one phase's rows (phase, stamp, ...)."""
    return {r[1]: r for r in rows if r[0] == name}


def _filtered(t, truth, gain=K_O):
    """truth through the observer's first-order response dr/dt = K_O (truth - r)."""
    out = np.zeros_like(truth)
    for k in range(1, len(t)):
        a = np.exp(-gain * (t[k] - t[k - 1]))
        out[k] = a * out[k - 1] + (1 - a) * 0.5 * (truth[k - 1] + truth[k])
    return out


def contact_series(rec, name):
    """t (s from the observer's reset), truth, r (N, n) and the Contact rows of a phase,
    on the stamps present in all three from the reset on. The reset is the phase's last
    residual with r = 0 (the observer's first output after it), found among the
    residuals alone: a truth or Contact message of that stamp lost under load does not
    hide it. RuntimeError when the phase recorded none."""
    with rec.lock:
        res = _by_phase(rec.residual, name)
        truth = {r[1]: r for r in rec.truth}      # (tagged by arrival: match by stamp)
        contact = {r[1]: r for r in rec.contact}
    zero = [st for st, row in res.items() if not np.any(row[2])]
    if not zero:
        raise RuntimeError(f"phase {name}: the observer's reset (its one output with r = 0) "
                           f"is not among the {len(res)} residuals recorded")
    reset = max(zero)
    stamps = [st for st in sorted(set(truth) & set(res) & set(contact)) if st >= reset]
    return dict(stamp=np.array(stamps), t=np.array(stamps) - reset,
                truth=np.array([truth[s][2] for s in stamps]),
                r=np.array([res[s][2] for s in stamps]),
                contact=[contact[s] for s in stamps])


def contact_numbers(rec, model, scenario, time_scale=1.0):
    """Per contact phase: detection delay, isolated vs true link, estimation error; for the
    contact-free tracking phase: false detections and the peak |r|."""
    from manip_dynamics.core.contact.detector import arm_topology
    joint_link = arm_topology(model).joint_link
    out, series = {}, {}
    free = contact_series(rec, 'tracking')
    out['tracking'] = dict(samples=len(free['t']), peak_residual=float(np.abs(free['r']).max()),
                           false_detections=int(sum(c[2] for c in free['contact'])))
    for name in played(scenario, CONTACT_PHASE_NAMES):
        s = series[name] = contact_series(rec, name)
        hit = np.abs(s['truth']).max(axis=1) > 0
        k0 = int(np.argmax(hit)) - 1                 # the last sample before tau_ext != 0
        kd = next(k for k in range(k0 + 1, len(s['t'])) if s['contact'][k][2])
        settled = min(kd + int(np.ceil(3 / K_O * 100)), len(s['t']) - 1)
        loaded = np.flatnonzero(np.abs(s['truth'][k0 + 1:]).max(axis=0) > 0)
        if name == 'pushed':
            steady = np.arange(k0 + int(np.ceil(5 / K_O * 100)),
                               k0 + int(scenario['contact']['push_for'] * time_scale * 100))
            short = steady[-1] + 1 - len(s['t'])
            if short > 0:
                raise RuntimeError(f'the recording of phase {name} ended {short} samples '
                                   'before the push did')
        else:                                        # resting on the box: the last 0.5 s
            steady = np.arange(len(s['t']) - 50, len(s['t']))
        scale = np.abs(s['truth'][steady]).max()
        ideal = _filtered(s['t'], s['truth'])
        out[name] = dict(
            onset_s=float(s['t'][k0]), detection_ms=1e3 * (s['contact'][kd][4] - s['stamp'][k0]),
            isolated_at_detection=s['contact'][kd][3], isolated_link=s['contact'][settled][3],
            true_link=joint_link[loaded[-1]], peak_truth=float(scale),
            error_vs_filtered=float(np.abs(s['r'][steady] - ideal[steady]).max() / scale),
            error_vs_truth=float(np.abs(s['r'][steady] - s['truth'][steady]).max() / scale),
            detection_index=kd)
    return out, series

def save_recording(rec, path):
    """Raw traffic (stamps in s, arrays per message) for later inspection."""
    phases = [p[0] for p in PHASES + CONTACT_PHASES]
    with rec.lock:
        js, ref, dyn = list(rec.joint_states), list(rec.reference), list(rec.dynamics)
        truth = list(rec.truth)

    def phase_index(rows):
        return np.array([phases.index(r[0]) if r[0] in phases else -1 for r in rows])
    np.savez_compressed(
        path,
        phases=np.array(phases),
        joint_states_phase=phase_index(js), joint_states_stamp=np.array([r[1] for r in js]),
        joint_states_position=np.array([r[2] for r in js]),
        joint_states_velocity=np.array([r[3] for r in js]),
        joint_states_effort=np.array([r[4] for r in js]),
        external_torques_phase=phase_index(truth),
        external_torques_stamp=np.array([r[1] for r in truth]),
        external_torques=np.array([r[2] for r in truth]).reshape(len(truth), -1),
        reference_phase=phase_index(ref), reference_stamp=np.array([r[1] for r in ref]),
        reference_position=np.array([r[2] for r in ref]).reshape(len(ref), -1),
        reference_effort=np.array([r[3] for r in ref]).reshape(len(ref), -1),
        dynamics_phase=phase_index(dyn), dynamics_stamp=np.array([r[1] for r in dyn]))


def print_skipped_table(summary, names):
    """The table of a run with skipped hold / tracking phases: what ran, what did not."""
    print(f"\nclosed-loop demo: {summary['robot']} ({len(names)} joints)")
    for key in ('released', 'gravity', 'tracking', 'friction'):
        if key in summary:
            print(f"{key:<10} max |q-q0| {summary[key]['max_deviation_rad']:.3g} rad")
        else:
            print(f"{key:<10} skipped: {summary['skipped'][key]}")


def print_table(summary, names):
    if not all(k in summary for k in ('released', 'gravity', 'tracking', 'friction')):
        return print_skipped_table(summary, names)
    r, g, t, f = (summary[k] for k in ('released', 'gravity', 'tracking', 'friction'))
    print()
    print(f"closed-loop demo: {summary['robot']} ({len(names)} joints) on MuJoCo "
          f"{summary['mujoco_version']}, ROS_DOMAIN_ID={summary['ros_domain_id']}")
    print(f"{'phase':<10} {'controller':<16} {'friction':<8} {'time s':>6} "
          f"{'max |q-q0| rad':>15} {'tip drop m':>10}  result")
    print(f"{'released':<10} {'off (tau = 0)':<16} {'off':<8} {r['duration_s']:6.2f} "
          f"{r['max_deviation_rad']:15.3f} {r['tip_drop_m']:10.3f}  falls, "
          f"{'rests' if r['final_speed_rad_s'] < 0.1 else 'still moving'} at the end "
          f"({r['final_speed_rad_s']:.3f} rad/s); limit overshoot "
          f"{r['limit_overshoot_rad']:.1e} rad; peak contact |tau_ext| "
          f"{r['peak_external_torque']:.0f} N*m")
    print(f"{'gravity':<10} {'tau = g(q)':<16} {'off':<8} {g['duration_s']:6.2f} "
          f"{g['max_deviation_rad']:15.2e} {g['tip_drop_m']:10.2e}  holds: drift of our g "
          f"in MuJoCo")
    for key, row, fr in (('tracking', t, 'off'), ('friction', f, 'on')):
        print(f"{key:<10} {'computed torque':<16} {fr:<8} {row['duration_s']:6.2f} "
              f"{row['max_deviation_rad']:15.3f} {'':>10}  error RMS {row['rms_error_rad']:.2e} "
              f"rad, max {row['max_error_rad']:.2e} rad")
    print('peak |tau| per joint (N*m):')
    for key in ('released', 'gravity', 'tracking', 'friction'):
        print(f"  {key:<9} {_fmt(summary[key]['peak_torque'])}")
    print(f"tracking RMS error per joint (rad), friction off: {_fmt(t['rms_error_per_joint'])}")
    print(f"tracking RMS error per joint (rad), friction on:  {_fmt(f['rms_error_per_joint'])}")


def print_contact_table(c, enter='0.2 N*m'):
    """The contact phases: what the dynamics node's observer saw against MuJoCo's truth."""
    t = c['tracking']
    print(f"contact awareness (dynamics_node's observer, K_O = {K_O:g} 1/s, enter {enter}):")
    print(f"  tracking   no contact: {t['false_detections']} false detections over "
          f"{t['samples']} samples, peak |r| {t['peak_residual']:.1e} N*m")
    for name in [k for k in CONTACT_PHASE_NAMES if k in c]:
        n = c[name]
        print(f"  {name:<10} detected {n['detection_ms']:.0f} ms after the onset, isolated "
              f"{n['isolated_link']} (true {n['true_link']}; at the detecting sample "
              f"{n['isolated_at_detection']}), error {100 * n['error_vs_filtered']:.2f} % of "
              f"{n['peak_truth']:.1f} N*m vs the filtered truth, "
              f"{100 * n['error_vs_truth']:.2f} % vs the truth")
