"""The closed-loop demo's safety picture (issue 23): ISO/TS 15066 along the tracked motion.

From the motion the arm actually tracked in the demo's ``tracking`` phase (the simulator's
measured q, qd and stamps on ``joint_states``, as recorded), for the body region
``hands_fingers`` ("Hands and fingers" of manip_dynamics/safety/iso_ts_15066.yaml) and the
default monitored points (every moving link's origin and the tip;
``safety.default_points``), :func:`manip_dynamics.safety.safety_along_motion` gives every
point's ratio |v| / v_max per sample, the retiming factor s, the ratios of the retimed
motion, and the standard's shortcut m_R = M/2 + m_L beside the governing point's
effective mass. This module writes ``safety_along_motion.png`` and the summary's
``safety`` entry, and prints two lines.

``summary.json`` key ``safety`` (when the tracking phase was played; kg, m/s, s):
``region`` (key), ``region_name``, ``phase`` ('tracking'), ``samples``, ``points``
(labels), ``worst_ratio`` (max over samples and points), ``worst_point``,
``worst_sample`` (index among the phase's joint_states in recording order, i.e. in
``recording.npz`` rows with ``joint_states_phase`` = the tracking phase),
``worst_stamp_s`` (that state's stamp), ``worst_time_s`` (from the phase's first state),
``retiming_scale`` (s >= 1), ``worst_ratio_retimed``, ``limit_scale`` (s* = the worst
ratio: the time scaling that puts the motion at its limit, < 1 = it could run faster) and
``worst_ratio_at_limit`` (recomputed from qd / s*: 1), ``duration_s``,
``duration_retimed_s``, ``simplified_mass_kg`` (m_R), ``simplified_v_max_m_s``,
``governing_mass_kg`` / ``governing_v_max_m_s`` / ``shortcut_ratio`` ({min, max} over the
moving samples: the governing point's effective mass and v_max, and v_max,S / v_max),
``moving_samples``, ``shortcut_unsafe_fraction`` (share of the moving samples where the
shortcut's v_max exceeds the governing point's), ``figure`` (file name, unless
``--no-plots``).
"""
from __future__ import annotations

import numpy as np

REGION = 'hands_fingers'
PHASE = 'tracking'
FIGURE = 'safety_along_motion.png'


def tracked_motion(rec, phase=PHASE):
    """(t (K,) s from the phase's first state, stamps (K,) s, q (K, n), qd (K, n)) of the
    recorded joint_states of ``phase``, in recording order."""
    with rec.lock:
        rows = [r for r in rec.joint_states if r[0] == phase]
    stamps = np.array([r[1] for r in rows])
    return (stamps - stamps[0], stamps, np.array([r[2] for r in rows]),
            np.array([r[3] for r in rows]))


def add_safety(summary, rec, model, tip, out_dir, plots=True):
    """summary['safety'] (module doc) from the tracked motion; the figure unless ``plots``
    is false; prints the numbers. Returns the written figure paths ([] when the tracking
    phase was not played)."""
    from manip_dynamics.core.errors import InputError
    from manip_dynamics.safety import BodyModel, default_points, safety_along_motion
    if PHASE not in summary:
        print(f'safety along the motion: no {PHASE} phase played, nothing to assess')
        return []
    region = BodyModel.load()[REGION]
    t, stamps, q, qd = tracked_motion(rec)
    try:
        res = safety_along_motion(model, region, t, q, qd,
                                  points=default_points(model, tip=tip))
    except InputError as e:                   # e.g. a non-finite recorded state: say so
        print(f'safety along the motion: not assessed: {e}')
        return []
    if not res.moving.any():
        print(f'safety along the motion: no monitored point moved in the {PHASE} phase')
        return []
    numbers = safety_numbers(res, region, stamps)
    summary['safety'] = numbers
    print_safety(numbers)
    if not plots:
        return []
    path = out_dir / FIGURE
    plot_safety(res, region, summary.get('robot', ''), path)
    numbers['figure'] = FIGURE
    return [path]


def _span(x):
    return dict(min=float(np.min(x)), max=float(np.max(x)))


def safety_numbers(res, region, stamps):
    """The summary's ``safety`` entry (module doc) of a MotionSafety."""
    k = res.worst_sample
    moving = res.moving
    return dict(
        region=region.key, region_name=region.name, phase=PHASE, samples=len(res.t),
        points=list(res.labels), worst_ratio=res.worst_ratio,
        worst_point=res.labels[int(res.worst[k])], worst_sample=k,
        worst_stamp_s=float(stamps[k]), worst_time_s=float(res.t[k]),
        retiming_scale=float(res.scale), worst_ratio_retimed=float(res.ratio_retimed.max()),
        limit_scale=float(res.limit_scale),
        worst_ratio_at_limit=float(res.ratio_at_limit.max()),
        duration_s=float(res.t[-1]), duration_retimed_s=float(res.t_retimed[-1]),
        simplified_mass_kg=float(res.simplified_mass),
        simplified_v_max_m_s=float(res.simplified_v_max),
        governing_mass_kg=_span(res.governing('effective_mass')[moving]),
        governing_v_max_m_s=_span(res.governing('v_max')[moving]),
        shortcut_ratio=_span(res.shortcut_ratio[moving]),
        moving_samples=int(moving.sum()),
        shortcut_unsafe_fraction=float(res.unsafe_fraction))


def print_safety(n):
    print(f"safety along the tracked motion ({n['region_name']}, {n['samples']} samples): "
          f"worst ratio {n['worst_ratio']:.2f} at {n['worst_point']} (t = "
          f"{n['worst_time_s']:.2f} s); retimed by s = {n['retiming_scale']:.2f}: worst "
          f"{n['worst_ratio_retimed']:.2f}; at its limit the same path would take "
          f"{n['limit_scale']:.2f} x its time")
    c = n['shortcut_ratio']
    print(f"  the standard's shortcut m_R = M/2 + m_L = {n['simplified_mass_kg']:.2f} kg "
          f"(v_max {n['simplified_v_max_m_s']:.2f} m/s) against the governing point's "
          f"{n['governing_mass_kg']['min']:.2f}-{n['governing_mass_kg']['max']:.2f} kg: "
          f"v_max ratio {c['min']:.2f}-{c['max']:.2f}, unsafe on "
          f"{100 * n['shortcut_unsafe_fraction']:.0f} % of the motion")


def plot_safety(res, region, robot, path):
    """Three panels: (a) every point's ratio over time, before (solid, t) and after
    retiming (dashed, t s), ratio = 1 marked; (b) the governing point's effective mass and
    the shortcut's m_R; (c) their two v_max, where the shortcut's is higher (unsafe) shaded."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(13, 12))
    colors = plt.cm.tab10(np.arange(len(res.labels)) % 10)
    _plot_ratios(axes[0], res, region, colors)
    _plot_shortcut(axes[1], axes[2], res, colors)
    fig.suptitle(f'{robot}: ISO/TS 15066 transient contact with "{region.name}" along the '
                 f'motion the arm tracked in the demo (measured q, qd)')
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _plot_ratios(ax, res, region, colors):
    """Solid: as tracked. Dashed: retimed by check_trajectory's s when s > 1; else (the
    motion is within its limits as tracked, s = 1) the same path at its limit, s* < 1."""
    if res.scale > 1:
        t2, r2 = res.t_retimed, res.ratio_retimed
        what = (f'\ndashed: retimed by s = {res.scale:.2f} (times x s, velocities / s): worst '
                f'{r2.max():.2f}')
    else:
        t2, r2 = res.t_at_limit, res.ratio_at_limit
        what = (f'within every limit as tracked (retiming s = 1);\ndashed: the same path at '
                f'its limit, times x s* = {res.limit_scale:.2f} ({1 / res.limit_scale:.1f}x '
                f'faster): worst {r2.max():.2f}')
    # drawn last to first: of points at the same place (a flange frame at a link's
    # origin), the first listed, which the monitor names the worst on a tie, is on top
    lines = {}
    for i in reversed(range(len(res.labels))):
        lines[i], = ax.plot(res.t, res.ratio[:, i], '-', color=colors[i], lw=1.3,
                            label=res.labels[i])
        ax.plot(t2, r2[:, i], '--', color=colors[i], lw=1.0)
    ax.axhline(1.0, color='r', lw=1.5)
    ax.text(max(res.t[-1], t2[-1]), 1.0, ' ratio = 1', color='r', va='bottom', ha='right')
    ax.set_ylabel('ratio |v| / v_max')
    ax.set_xlabel('time (s): as tracked (solid), retimed (dashed)')
    ax.set_title(f'(a) every monitored point as tracked (solid): worst ratio '
                 f'{res.worst_ratio:.2f}; {what}', fontsize=10)
    ax.legend(handles=[lines[i] for i in sorted(lines)], fontsize=7, ncol=2, loc='upper left')
    ax.grid(True, alpha=0.3)


def _plot_shortcut(ax_m, ax_v, res, colors):
    m = res.moving
    t = res.t[m]
    who = res.worst[m]
    m_gov, v_gov = res.governing('effective_mass')[m], res.governing('v_max')[m]
    ax_m.scatter(t, m_gov, c=colors[who], s=6, label='governing point (its colour in (a))')
    ax_m.axhline(res.simplified_mass, color='k', ls='--',
                 label=f'shortcut m_R = M/2 + m_L = {res.simplified_mass:.2f} kg')
    ax_m.set_ylim(0.0, 1.1 * max(res.simplified_mass, float(m_gov.max())))
    ax_m.set_ylabel('effective mass (kg)')
    ax_m.set_title('(b) effective mass of the governing point (largest ratio) along its '
                   'motion, against the standard\'s shortcut', fontsize=10)
    ax_v.scatter(t, v_gov, c=colors[who], s=6, label='governing point')
    ax_v.axhline(res.simplified_v_max, color='k', ls='--',
                 label=f'shortcut: {res.simplified_v_max:.2f} m/s')
    unsafe = res.simplified_v_max > v_gov
    ax_v.fill_between(t, v_gov, res.simplified_v_max, where=unsafe, color='r', alpha=0.25,
                      label='shortcut allows more than the point may (unsafe)')
    c = res.shortcut_ratio[m]
    ax_v.set_title(f'(c) permissible speed: shortcut / configuration-dependent from '
                   f'{c.min():.2f} to {c.max():.2f}; unsafe on '
                   f'{100 * res.unsafe_fraction:.0f} % of the moving samples', fontsize=10)
    ax_v.set_ylabel('v_max (m/s)')
    for ax in (ax_m, ax_v):
        ax.set_xlabel('time (s), as tracked')
        ax.legend(fontsize=8, loc='best')
        ax.grid(True, alpha=0.3)
