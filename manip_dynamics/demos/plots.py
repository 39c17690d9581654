"""The closed-loop demo's figures: angles, errors and torques per phase, the tip's
effective-inertia ellipsoids, the observer against the true external torques, and the
arm rendered by MuJoCo offscreen (PNG of the phases' ends, animated GIF)."""
from __future__ import annotations

import numpy as np

from .phases import CONTACT_PHASE_NAMES, K_O, PHASES, TITLES, TRACKED, played


def plot_contact(series, numbers, names, path):
    """True (dashed) against estimated (solid) external joint torques of the contact
    phases, one colour per joint, the detection marked; below, r - tau_ext."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    shown = [name for name in CONTACT_PHASE_NAMES if name in numbers]
    fig, axes = plt.subplots(2, len(shown), figsize=(16, 8), sharex='col', squeeze=False)
    colors = plt.cm.tab10(np.arange(len(names)) % 10)
    for col, name in enumerate(shown):
        s, n = series[name], numbers[name]
        for j in range(len(names)):
            axes[0, col].plot(s['t'], s['truth'][:, j], '--', color=colors[j], lw=1.2)
            axes[0, col].plot(s['t'], s['r'][:, j], '-', color=colors[j], lw=1.0,
                              label=names[j])
            axes[1, col].plot(s['t'], s['r'][:, j] - s['truth'][:, j], color=colors[j])
        td = s['t'][n['detection_index']]
        for ax in axes[:, col]:
            ax.axvline(td, color='k', lw=0.8, ls=':')
            ax.grid(True, alpha=0.3)
        axes[0, col].set_title(f"{TITLES[name]}: detected {n['detection_ms']:.0f} ms after "
                               f"the onset, isolated {n['isolated_link']} (true "
                               f"{n['true_link']})", fontsize=9)
        axes[0, col].set_ylabel('tau_ext (N*m): true dashed, estimated r solid')
        axes[1, col].set_ylabel('r - tau_ext (N*m)')
        axes[1, col].set_xlabel("time since the observer's reset, after the release (s)")
    axes[0, 0].legend(fontsize=7, loc='best')
    fig.suptitle(f'momentum observer of dynamics_node (K_O = {K_O:g} 1/s) against MuJoCo\'s '
                 'true external joint torques (arm_simulator/external_torques)')
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)

def plot_closed_loop(series, names, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    shown = [p[0] for p in PHASES if p[0] in series]
    fig, axes = plt.subplots(3, len(shown), figsize=(20, 10), sharex='col', squeeze=False)
    for col, phase in enumerate(shown):
        s = series[phase]
        axes[0, col].set_title(TITLES[phase])
        axes[0, col].plot(s['t'], s['q'])
        axes[0, col].set_ylabel('q (rad)')
        if phase in TRACKED:
            axes[1, col].plot(s['t_err'], s['err'])
            axes[1, col].set_ylabel('q_d - q (rad)')
        else:
            axes[1, col].plot(s['t'], s['err'])
            axes[1, col].set_ylabel('q - q0 (rad)')
        axes[2, col].plot(s['t'], s['tau'])
        axes[2, col].set_ylabel('motor torque (N*m)')
        axes[2, col].set_xlabel('time (s)')
        for ax in axes[:, col]:
            ax.grid(True, alpha=0.3)
    axes[0, 0].legend(names, fontsize=7, loc='best')
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_ellipsoids(tracked, model, tip, path, count=6):
    """2D projections of the tip's translational effective-inertia ellipsoid.

    Lambda_v = (J_v M^-1 J_v^T)^-1 (the top-left 3x3 of the published inverse effective
    inertia, inverted); the drawn surface is {Lambda_v a : |a| = 1}: the force (N) that
    gives the tip a unit acceleration in each direction. Its outline projected on a plane
    P (2 x 3) is the ellipse L c, |c| = 1, with L L^T = P Lambda_v^2 P^T.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    picks = [tracked[int(i)] for i in np.linspace(0, len(tracked) - 1, count)]
    planes = (('x', 'z', (0, 2)), ('x', 'y', (0, 1)), ('y', 'z', (1, 2)))
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(picks)))
    links = list(model.frame_names)
    masses = []
    lam_all = []
    for _, _, q, A, _ in picks:
        # pinv: a planar arm cannot accelerate its tip out of its plane (A singular there);
        # that direction is drawn with zero extent. For the Panda this is inv(A).
        lam = np.linalg.pinv(A[:3, :3], rcond=1e-10, hermitian=True)
        lam_all.append(lam)
        masses.append(np.linalg.eigvalsh(lam))
    scale = 0.25 / max(float(np.max(masses)), 1e-9)   # largest semi-axis drawn 0.25 m
    circle = np.stack([np.cos(np.linspace(0, 2 * np.pi, 120)),
                       np.sin(np.linspace(0, 2 * np.pi, 120))])
    t_first = picks[0][1]
    for (_, stamp, q, A, _), lam, color in zip(picks, lam_all, colors):
        points = np.array([model.frame_pose(q, f)[:3, 3] for f in links])
        p_tip = model.frame_pose(q, tip)[:3, 3]
        for ax, (a, b, idx) in zip(axes, planes):
            P = np.zeros((2, 3))
            P[0, idx[0]] = P[1, idx[1]] = 1.0
            S = P @ lam @ lam @ P.T
            w, V = np.linalg.eigh(S)
            L = V @ np.diag(np.sqrt(np.clip(w, 0, None)))
            ell = (L @ circle) * scale + (P @ p_tip)[:, None]
            ax.plot(points[:, idx[0]], points[:, idx[1]], 'o-', color=color, alpha=0.5, lw=1,
                    ms=2)
            ax.plot(ell[0], ell[1], color=color, lw=1.5, label=f't = {stamp - t_first:.1f} s')
    for ax, (a, b, _) in zip(axes, planes):
        ax.set_xlabel(f'{a} (m)')
        ax.set_ylabel(f'{b} (m)')
        ax.set_aspect('equal', adjustable='datalim')
        ax.grid(True, alpha=0.3)
        ax.set_title(f'{a}-{b} projection')
    axes[0].legend(fontsize=8, loc='best')
    fig.suptitle(f'tip ({tip}) translational effective inertia {{Lambda_v a : |a| = 1}} '
                 f'(from ~/dynamics) along the tracked motion, with the arm (links)\n'
                 f'scale: {0.25 / scale:.2f} kg drawn as 0.25 m; eigenvalues from '
                 f'{np.min(masses):.2f} to {np.max(masses):.2f} kg')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [[float(x) for x in m] for m in masses]


def picture_model(urdf_xml, model, scenario, visuals=None):
    """(MjModel, qpos addresses in model order) of the scene to render: the plant's
    capsules; with ``visuals`` = dict(package_paths, base_dir), the URDF's visual shapes
    instead when every one of them was found (sim/visuals.py), saying which in one line."""
    import mujoco

    from manip_dynamics.sim.scene import SceneOptions, build_spec
    from manip_dynamics.sim.visuals import add_visuals

    options = SceneOptions(floor_height=scenario['floor_height'])
    if 'thresholds' in scenario:               # an arm of --urdf: its radius, its box
        contact = scenario['contact']
        options.collision_radius = scenario['collision_radius']
        options.obstacle_size = contact.get('obstacle_size')
        options.obstacle_position = contact.get('obstacle_position', (0.5, 0.0, 0.2))
    spec = build_spec(urdf_xml, model, options)
    shown = 'capsules'
    if visuals is not None:
        added, missing = add_visuals(spec, urdf_xml, **visuals)
        if added and not missing:
            shown = 'visuals'
            print(f'pictures: the URDF\'s {added} visual shapes')
        else:
            print('pictures: capsules along the links, not the URDF\'s visuals ('
                  + (f'{len(missing)} not found, e.g. {missing[0]}' if missing else 'none')
                  + '; --package-path DIR for package://)')
    m = spec.compile()
    if shown == 'visuals':
        for g in range(m.ngeom):
            if '_capsule' in (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or ''):
                m.geom_rgba[g, 3] = 0.0
    jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in model.joint_names]
    return m, m.jnt_qposadr[jid].copy()


def render_pictures(rec, urdf_xml, model, scenario, out_dir, fps=6.0, visuals=None):
    """``arm_phases.png`` (the arm at the end of each phase) and ``arm_demo.gif`` (every
    phase at ``fps`` frames per simulated second), rendered by MuJoCo offscreen from the
    recorded joint_states; returns the written paths, or [] after saying in one line why
    rendering is unavailable. ``visuals``: see :func:`picture_model`."""
    from manip_dynamics.sim import render

    m, qadr = picture_model(urdf_xml, model, scenario, visuals)
    renderer, why = render.open_renderer(m)
    if renderer is None:
        print(f'no pictures of the arm: offscreen rendering unavailable ({why}); '
              f'see docs/simulation.md (make setup-render)')
        return []
    camera = render.Camera(**scenario['camera'])
    with rec.lock:
        states = list(rec.joint_states)
    frames, labels, finals = [], [], []
    shown = played(scenario, [p[0] for p in PHASES])
    for name in shown:
        rows = [s for s in states if s[0] == name]
        step = max(1, int(round(100 / fps)))
        picked = rows[::step] + [rows[-1]]
        shots = render.render_states(renderer, m, qadr, [r[2] for r in picked], camera)
        t0 = rows[0][1]
        frames += shots
        labels += [f'{TITLES[name]}   t = {r[1] - t0:4.1f} s' for r in picked]
        finals.append(shots[-1])
    renderer.close()
    png, gif = out_dir / 'arm_phases.png', out_dir / 'arm_demo.gif'
    render.save_png(render.montage(finals, [TITLES[p] + ' (end)' for p in shown], 2), png)
    render.save_gif(frames, labels, gif, fps=fps)
    return [png, gif]
