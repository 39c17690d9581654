"""The closed-loop demo's scenario for an arm nobody tuned it for, chosen from its model.

:func:`scenario_for` returns, for any RobotModel and tip frame, what
``closed_loop.SCENARIOS`` holds for the embedded robots (start pose ``q0``, tracking ``amplitude``
/ ``frequency``, ``floor_height``, ``camera``, ``contact``) plus the sizes the embedded robots take
as written (``collision_radius``, the observer's per-joint ``thresholds``) and ``skipped``
{phase: why}. No ROS, no per-arm numbers; every choice is a rule of the model's joint
limits, effort limits, gravity torques g(q) and reach:

* reach R: the largest distance of a moving link's origin from the first one's, at q0;
* q0: the middle of each joint's range (0 for an unbounded joint); if g there needs less
  than 5 % of every effort limit (e.g. an arm upright: a hold that shows nothing), the
  middle with one joint leaned by 0.6 rad that loads the arm most (at most 50 %); if
  more than half an effort limit, the candidate pose (middle, then a fixed set of poses
  drawn within the limits) with the smallest max_j |g_j| / effort_j;
* tracking: q_d = q0 + A (1 - cos 2 pi f t) with f = 0.3 .. 0.5 Hz and A_j up to 0.25 rad
  (0.05 R m on a prismatic joint), upward from q0 (at most 40 % of the room there); A halved until the inverse dynamics along q_d needs at most 60 % of every effort
  limit (phase skipped if even g(q0) needs more than 90 %);
* gains of the computed-torque law qdd_d + kd e' + kp e (kp = wn^2, kd = 2 wn): wn = 10
  rad/s (the Panda's), raised to twice the arm's fastest gravity frequency w_g (w_g^2 =
  the largest |eigenvalue| of M(q0)^-1 dg/dq(q0)), at most 0.3 / T with T the control
  period: a short light link falls back fast while a torque is held for one period, and
  the tracking error that leaves is about w_g^2 qd T / kp;
* the torque scale tau_s,j = max(peak |tau_j| along q_d, 10 % of the largest one); the
  observer's enter threshold 1 % of it (the Panda's hand-set 0.2 N*m is 1 % of its ~20);
* push: at the tip frame offset 0.1 R from the axis of the last joint moving it, along
  the velocity that joint gives that point, sized so that the last joint feels 20
  thresholds, scaled down so that no joint needs over 50 % of its effort limit
  (skipped if the last joint then feels under 5 thresholds);
* obstacle: a box on the first joint (s) that moves the tip by at least 0.3 R per rad:
  centred on the middle of the longest segment of the link it moves, where that link
  would be at q0 - 0.5 rad on s (q0 + 0.3 rad on s the start, the tracking amplitude of s
  away from it); skipped if the box touches the arm at the start pose or along the
  tracking reference (a MuJoCo collision query of the scene);
* floor: at 0, lowered below the lowest moving link origin along the reference; capsule
  radius min(4 cm, 0.03 R).

Units: rad (m for prismatic joints), N*m (N), m, s; root frame, z up.
"""
from __future__ import annotations

import numpy as np

PHASE_TIMES = dict(released=3.0, gravity=4.0, tracking=6.0, friction=6.0, pushed=2.5,
                   obstacle=2.0)
FREQUENCIES = (0.3, 0.35, 0.3, 0.4, 0.45, 0.4, 0.5)


def _moving_frames(model):
    from manip_dynamics.core.contact.detector import arm_topology
    topo = arm_topology(model)
    return topo, [f for f in model.frame_names if topo.frame_joint[f] >= 0]


def _origins(model, q, frames):
    return np.array([model.frame_pose(q, f)[:3, 3] for f in frames])


def reach_of(model, q, frames) -> float:
    """R: the largest distance between a moving link's origin and the first one's (m)."""
    p = _origins(model, q, frames)
    return float(max(np.linalg.norm(p - p[0], axis=1).max(), 0.05))


def _effort(model):
    """Effort limits with 0 / inf (unlimited) as +inf."""
    e = np.asarray(model.effort_limits, dtype=float)
    return np.where(np.isfinite(e) & (e > 0), e, np.inf)


def _load(model, q):
    """max_j |g_j(q)| / effort_j (0 where unlimited)."""
    return float(np.max(np.abs(model.gravity_torques(q)) / _effort(model)))


def start_pose(model) -> np.ndarray:
    """q0: the middle of each range (0 if unbounded), or the least loaded candidate."""
    lo, hi = np.asarray(model.position_lower), np.asarray(model.position_upper)
    bounded = np.isfinite(lo) & np.isfinite(hi) & (lo < hi)
    mid = np.zeros(model.n)
    mid[bounded] = 0.5 * (lo[bounded] + hi[bounded])
    if 0.05 <= _load(model, mid) <= 0.5:
        return mid
    if _load(model, mid) < 0.05:     # e.g. upright: lean one joint 0.6 rad, most loaded
        leaned = [mid + s * 0.6 * e for e in np.eye(model.n) for s in (1.0, -1.0)]
        leaned = [q for q in leaned if np.all(q >= lo) and np.all(q <= hi)
                  and _load(model, q) <= 0.5]
        return max([mid] + leaned, key=lambda q: _load(model, q))
    rng = np.random.default_rng(0)
    span = np.where(bounded, np.nan_to_num(hi - lo), 2 * np.pi)
    base = np.where(bounded, np.nan_to_num(lo), -np.pi)
    candidates = [mid] + [base + span * (0.2 + 0.6 * rng.random(model.n)) for _ in range(64)]
    return min(candidates, key=lambda q: _load(model, q))


def _amplitudes(model, q0, R):
    """A (n,) >= 0 (the controller's reference q0 + A (1 - cos) only rises): up to 0.25 rad
    (0.05 R m), at most 40 % of the room above q0."""
    hi = np.asarray(model.position_upper)
    up = np.where(np.isfinite(hi), hi - q0, np.inf)
    cap = np.array([0.05 * R if t == 'prismatic' else 0.25 for t in _joint_types(model)])
    return np.minimum(cap, 0.4 * np.maximum(up, 0.0) / 2.0)


def _joint_types(model):
    """'prismatic' or 'revolute' per coordinate (a prismatic column has zero angular rows)."""
    J = model.jacobian(np.zeros(model.n), model.default_tip)
    return ['prismatic' if not np.any(J[3:, j]) and np.any(J[:3, j]) else 'revolute'
            for j in range(model.n)]


def reference(q0, A, f, t):
    """q_d, qd_d, qdd_d (len(t), n) of q_d = q0 + A (1 - cos 2 pi f t)."""
    w = 2 * np.pi * np.asarray(f)
    t = np.asarray(t)[:, None]
    return (q0 + A * (1 - np.cos(w * t)), A * w * np.sin(w * t), A * w ** 2 * np.cos(w * t))


def _reference_torques(model, q0, A, f, seconds):
    t = np.linspace(0.0, seconds, int(seconds * 50) + 1)
    q, qd, qdd = reference(q0, A, f, t)
    return q, np.array([model.inverse_dynamics(a, b, c) for a, b, c in zip(q, qd, qdd)])


def tracking_plan(model, q0, R, seconds):
    """(A, f, reference q samples, peak |tau| per joint, why skipped or '')."""
    f = np.array([FREQUENCIES[j % len(FREQUENCIES)] for j in range(model.n)])
    effort = _effort(model)
    if _load(model, q0) > 0.9:
        j = int(np.argmax(np.abs(model.gravity_torques(q0)) / effort))
        return (np.zeros(model.n), f, q0[None], np.abs(model.gravity_torques(q0)),
                f"too weak to hold its own weight: g = {abs(model.gravity_torques(q0)[j]):.3g}"
                f" N*m at {model.joint_names[j]} vs effort limit {effort[j]:.3g} N*m")
    A = _amplitudes(model, q0, R)
    for _ in range(8):
        qs, tau = _reference_torques(model, q0, A, f, seconds)
        if np.all(np.abs(tau) <= 0.6 * effort):
            return A, f, qs, np.abs(tau).max(axis=0), ''
        A = 0.5 * A
    return (A, f, qs, np.abs(tau).max(axis=0),
            "the tracking reference needs more than 60 % of an effort limit even at 1/256 "
            "of its amplitude")


def gains(model, q0, period=0.01):
    """(kp 1/s^2, kd 1/s, w_g rad/s): see the module docstring."""
    h = 1e-6
    K = np.array([(model.gravity_torques(q0 + h * e) - model.gravity_torques(q0 - h * e))
                  / (2 * h) for e in np.eye(model.n)]).T          # dg/dq (n, n)
    try:
        w2 = float(np.max(np.abs(np.linalg.eigvals(np.linalg.solve(model.mass_matrix(q0),
                                                                     K)))))
    except np.linalg.LinAlgError:        # singular M: no gravity frequency, the default
        w2 = 0.0
    wn = float(np.clip(2.0 * np.sqrt(w2), 10.0, 0.3 / period))
    return wn ** 2, 2.0 * wn, float(np.sqrt(w2))


def _point_columns(model, q, link, p):
    """(3, n) linear velocity columns of the point p (root frame) fixed on ``link``."""
    J = model.jacobian(q, link)
    r = p - model.frame_pose(q, link)[:3, 3]
    return J[:3] + np.cross(J[3:].T, r).T


def push_plan(model, q0, tip, R, thresholds, topo):
    """(contact dict entries of the push, why skipped or ''): see the module docstring."""
    last = topo.frame_joint[tip]
    link = topo.joint_link[last]
    T_link, p_tip = model.frame_pose(q0, link), model.frame_pose(q0, tip)[:3, 3]
    J = model.jacobian(q0, link)
    axis = J[3:, last] if np.any(J[3:, last]) else J[:3, last]
    axis = axis / np.linalg.norm(axis)
    e1 = np.cross(axis, [1.0, 0, 0] if abs(axis[0]) < 0.9 else [0, 1.0, 0])
    e1 /= np.linalg.norm(e1)
    offsets = [s * e for e in (e1, np.cross(axis, e1)) for s in (1.0, -1.0)]
    p = max((p_tip + 0.1 * R * d for d in offsets),
            key=lambda x: np.linalg.norm(_point_columns(model, q0, link, x)[:, last]))
    V = _point_columns(model, q0, link, p)
    lever = float(np.linalg.norm(V[:, last]))
    force = V[:, last] / lever * (20 * thresholds[last] / lever)
    tau = np.abs(V.T @ force)
    force = force * min(1.0, float(np.min(0.5 * _effort(model) / np.maximum(tau, 1e-300))))
    felt = abs(float(V[:, last] @ force))
    entries = dict(link=link, force=[float(x) for x in force],
                   point=[float(x) for x in T_link[:3, :3].T @ (p - T_link[:3, 3])],
                   push_at=1.0, push_for=1.0, push_link=link)
    if felt < 5 * thresholds[last]:
        return entries, (f"a push felt by {model.joint_names[last]} above 5 observer "
                         f"thresholds needs more than half an effort limit")
    return entries, ''


def _body_points(model, q, topo, s):
    """Origins (root frame) fixed on the link joint s moves: its own frames and the
    origins of the links of joints directly below it."""
    own = [f for f in model.frame_names if topo.frame_joint[f] == s]
    below = [topo.joint_link[k] for k in range(s + 1, model.n)
             if topo.moves[topo.joint_link[k]][s]
             and not any(topo.moves[topo.joint_link[k]][m] for m in range(s + 1, k))]
    return _origins(model, q, own + below)


def obstacle_candidates(model, q0, tip, R, radius, topo, A):
    """Contact entries of the obstacle, one per candidate joint s (proximal first): the box
    on the side of q0 the tracking amplitude A does not go to."""
    lo, hi = np.asarray(model.position_lower), np.asarray(model.position_upper)
    Jt = model.jacobian(q0, tip)
    speeds = np.linalg.norm(Jt[:3], axis=0)
    movers = [j for j in range(model.n) if speeds[j] >= 0.3 * R]
    for s in movers:
        step = np.zeros(model.n)
        step[s] = 1.0
        sign = -1.0 if A[s] >= 0 else 1.0
        start, home = q0 - 0.3 * sign * step, q0 + 0.5 * sign * step
        if not (np.all(start >= lo) and np.all(start <= hi) and np.all(home >= lo)
                and np.all(home <= hi)):
            continue
        pts = _body_points(model, home, topo, s)
        origin = model.frame_pose(home, topo.joint_link[s])[:3, 3]
        far = pts[int(np.argmax(np.linalg.norm(pts - origin, axis=1)))]
        length = float(np.linalg.norm(far - origin))
        if length < 2 * radius:
            continue
        half = max(radius, 0.1 * length)
        yield dict(obstacle_size=[half, half, half],
                   obstacle_position=[float(x) for x in 0.5 * (origin + far)],
                   start_offset=[float(x) for x in start - q0],
                   home_offset=[float(x) for x in home - q0],
                   obstacle_link=topo.joint_link[s])


def touches(urdf_xml, model, options, states, geom_name):
    """True if, at any q of ``states``, an arm capsule touches the scene geom
    ``geom_name`` (MuJoCo's collision query at that configuration, no dynamics)."""
    import mujoco

    from manip_dynamics.sim.scene import build_model
    m = build_model(urdf_xml, model, options)
    d = mujoco.MjData(m)
    gid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, geom_name)
    jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in model.joint_names]
    qadr = m.jnt_qposadr[jid]
    for q in states:
        d.qpos[qadr] = q
        mujoco.mj_fwdPosition(m, d)
        if any(gid in (c.geom1, c.geom2) for c in d.contact[:d.ncon]):
            return True
    return False


def _camera(model, q0, frames, R):
    p = _origins(model, q0, frames)
    return dict(lookat=tuple(float(x) for x in 0.5 * (p.min(axis=0) + p.max(axis=0))),
                distance=float(2.6 * R), azimuth=135.0, elevation=-15.0)


def scenario_for(model, tip, urdf_xml, seconds=PHASE_TIMES['tracking']) -> dict:
    """The demo's scenario of ``model`` with task frame ``tip`` (module docstring)."""
    from manip_dynamics.sim.scene import SceneOptions
    topo, frames = _moving_frames(model)
    q0 = start_pose(model)
    R = reach_of(model, q0, frames)
    radius = float(min(0.04, 0.03 * R))
    A, f, qs, peak, why_tracking = tracking_plan(model, q0, R, seconds)
    skipped = {}
    if why_tracking:
        skipped = {k: why_tracking for k in ('gravity', 'tracking', 'friction', 'pushed',
                                             'obstacle')}
    scale = np.maximum(peak, 0.1 * peak.max())
    thresholds = 0.01 * np.maximum(scale, 1e-6)
    push, why_push = push_plan(model, q0, tip, R, thresholds, topo)
    obstacle, why_obstacle = {}, ("no joint moves a link long enough to run into a box "
                                  "within its limits without touching it while tracking")
    poses = list(qs) + [q0]
    floor = float(min(0.0, min(_origins(model, q, frames)[:, 2].min() for q in poses)
                      - radius - 0.02 * R))
    for box in obstacle_candidates(model, q0, tip, R, radius, topo, A):
        start = q0 + np.array(box['start_offset'])
        floor = min(floor, float(_origins(model, start, frames)[:, 2].min() - radius - 0.02 * R))
        opts = SceneOptions(floor_height=floor, collision_radius=radius,
                            obstacle_size=box['obstacle_size'],
                            obstacle_position=box['obstacle_position'])
        if not touches(urdf_xml, model, opts, poses + [start], 'obstacle'):
            obstacle, why_obstacle = box, ''
            break
    skipped.setdefault('pushed', why_push) if why_push else None
    skipped.setdefault('obstacle', why_obstacle) if why_obstacle else None
    contact = dict(push, **obstacle)
    kp, kd, w_g = gains(model, q0)
    return dict(q0=[float(x) for x in q0], amplitude=[float(x) for x in A],
                kp=kp, kd=kd, gravity_frequency=w_g,
                frequency=[float(x) for x in f], floor_height=floor,
                camera=_camera(model, q0, frames, R), contact=contact,
                collision_radius=radius, thresholds=[float(x) for x in thresholds],
                reach_m=R, torque_scale=[float(x) for x in scale], skipped=skipped)
