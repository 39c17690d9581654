"""The MuJoCo plant: the simulated arm's physics, stepped at a fixed rate (no ROS).

Equation MuJoCo integrates (joint space, the project's sign convention):

    M(q) qdd + C(q, qd) qd + g(q) = tau_motor - D qd + tau_frictionloss + tau_limits + tau_ext

with tau_motor the motors' force (the commanded torque clipped to ``ctrlrange`` = the URDF
effort limits), D the dof damping, the friction loss and joint limits as MuJoCo's soft
constraints, and tau_ext the external joint torque: wrenches applied through
:meth:`MujocoPlant.apply_wrench` (``xfrc_applied``) and contact forces of the capsules on
the floor or obstacle (``efc_J^T efc_force`` over contact rows only; joint-limit and
friction-loss rows are not external).

Joint order everywhere is the core model's (``model.joint_names``); MuJoCo's qpos/qvel
addresses are looked up by name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manip_dynamics.core.extras import import_extra
from manip_dynamics.sim.scene import INTEGRATOR_ENUM, SceneOptions, build_model

mujoco = import_extra("mujoco", __name__)

CONTACT_ROWS = (mujoco.mjtConstraint.mjCNSTR_CONTACT_FRICTIONLESS,
                mujoco.mjtConstraint.mjCNSTR_CONTACT_PYRAMIDAL,
                mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC)
# MuJoCo resets the data itself when a state blows up and only counts a warning.
UNSTABLE = [int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                             mujoco.mjtWarning.mjWARN_BADQACC)]


@dataclass
class Wrench:
    """A force (N) and torque (N*m) in root axes, acting at ``point`` (m, link frame) of
    body ``body`` for ``steps_left`` more steps."""
    body: int
    force: np.ndarray
    torque: np.ndarray
    point: np.ndarray
    steps_left: int


class MujocoPlant:
    """MuJoCo model + data of the URDF's arm in its scene, in the core model's joint order.

    urdf_xml: the URDF text; model: the core's RobotModel of it (names, limits, friction);
    options: :class:`SceneOptions` (time step, integrator, friction, scene, perturbations).
    """

    def __init__(self, urdf_xml: str, model, options: SceneOptions | None = None):
        self.options = options or SceneOptions()
        self.m = build_model(urdf_xml, model, self.options)
        self.d = mujoco.MjData(self.m)
        self.n = model.n
        self.joint_names = list(model.joint_names)
        jid = [mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in self.joint_names]
        self.qadr = self.m.jnt_qposadr[jid].copy()
        self.dadr = self.m.jnt_dofadr[jid].copy()
        self.actuators = np.array([mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_ACTUATOR, j)
                                   for j in self.joint_names])
        self.effort_limits = np.asarray(model.effort_limits, dtype=float)
        self.wrenches: list[Wrench] = []
        self.tau_applied = np.zeros(self.n)

    # ------------------------------------------------------------------ state
    @property
    def h(self) -> float:
        return float(self.m.opt.timestep)

    @property
    def time(self) -> float:
        return float(self.d.time)

    @property
    def q(self) -> np.ndarray:
        return self.d.qpos[self.qadr].copy()

    @property
    def qd(self) -> np.ndarray:
        return self.d.qvel[self.dadr].copy()

    def reset(self, q, qd=None):
        """Put the arm at (q, qd), time and wrenches kept; other MuJoCo state zeroed."""
        t = self.d.time
        mujoco.mj_resetData(self.m, self.d)
        self.d.time = t
        self.d.qpos[self.qadr] = np.asarray(q, dtype=float)
        self.d.qvel[self.dadr] = 0.0 if qd is None else np.asarray(qd, dtype=float)
        self._place_mimics()
        mujoco.mj_forward(self.m, self.d)

    def _place_mimics(self):
        """Mimic joints (URDF <mimic>: MuJoCo joint equalities q1 = c0 + c1 q2 + ...) put
        where their equality holds: left at 0, the constraint would kick the arm."""
        for e in range(self.m.neq):
            if self.m.eq_type[e] != mujoco.mjtEq.mjEQ_JOINT or self.m.eq_obj2id[e] < 0:
                continue
            a1 = self.m.jnt_qposadr[self.m.eq_obj1id[e]]
            a2 = self.m.jnt_qposadr[self.m.eq_obj2id[e]]
            d1, d2 = self.m.jnt_dofadr[self.m.eq_obj1id[e]], self.m.jnt_dofadr[self.m.eq_obj2id[e]]
            c = self.m.eq_data[e, :5]
            x = self.d.qpos[a2]
            self.d.qpos[a1] = c[0] + c[1] * x + c[2] * x ** 2 + c[3] * x ** 3 + c[4] * x ** 4
            self.d.qvel[d1] = (c[1] + 2 * c[2] * x + 3 * c[3] * x ** 2
                               + 4 * c[4] * x ** 3) * self.d.qvel[d2]

    # ------------------------------------------------------------------ settings
    def set_friction(self, viscous, coulomb):
        """Dof damping (N*m*s/rad) and friction loss (N*m) per joint, (n,) each."""
        self.m.dof_damping[self.dadr] = np.asarray(viscous, dtype=float)
        self.m.dof_frictionloss[self.dadr] = np.asarray(coulomb, dtype=float)

    def set_integrator(self, name: str):
        self.m.opt.integrator = INTEGRATOR_ENUM[name]

    def set_saturation(self, on: bool):
        """Clip motor torques to the effort limits (ctrlrange) or not."""
        limited = np.isfinite(self.effort_limits) & (self.effort_limits > 0) & bool(on)
        self.m.actuator_ctrllimited[self.actuators] = limited.astype(np.uint8)

    # ------------------------------------------------------------------ stepping
    def advance(self, tau, steps: int):
        """``steps`` fixed steps with the motor command ``tau`` (n,) held constant (ZOH)."""
        self.d.ctrl[self.actuators] = np.asarray(tau, dtype=float)
        warnings = self._unstable_count()
        if not self.wrenches:
            mujoco.mj_step(self.m, self.d, nstep=int(steps))
        for _ in range(int(steps) if self.wrenches else 0):
            self._set_xfrc()
            mujoco.mj_step(self.m, self.d)
            for w in self.wrenches:
                w.steps_left -= 1
            self.wrenches = [w for w in self.wrenches if w.steps_left > 0]
        self._set_xfrc()
        mujoco.mj_forward(self.m, self.d)   # efc_*, actuator_force of the state reached
        if self._unstable_count() != warnings or not (
                np.all(np.isfinite(self.d.qpos)) and np.all(np.isfinite(self.d.qvel))):
            raise FloatingPointError("simulation diverged (MuJoCo found a non-finite or huge "
                                     "position, velocity or acceleration)")
        self.tau_applied = self.d.actuator_force[self.actuators].copy()

    def _unstable_count(self) -> int:
        return int(sum(self.d.warning[w].number for w in UNSTABLE))

    # ------------------------------------------------------------------ disturbances
    def body_id(self, link: str) -> int:
        bid = mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_BODY, link)
        if bid <= 0:
            names = [self.m.body(i).name for i in range(1, self.m.nbody)]
            raise ValueError(f"unknown link {link!r}; links: {', '.join(names)}")
        return bid

    def apply_wrench(self, link: str, force, torque, point=(0.0, 0.0, 0.0), duration=0.0):
        """Apply ``force`` (N) and ``torque`` (N*m), root axes, at ``point`` (m, in the link's
        frame) of ``link`` for ``duration`` s of simulated time (at least one step)."""
        values = [np.asarray(v, dtype=float).reshape(3) for v in (force, torque, point)]
        if not all(np.all(np.isfinite(v)) for v in values) or not np.isfinite(duration) \
                or duration < 0:
            raise ValueError("force, torque, point must be finite 3-vectors and duration >= 0")
        steps = max(1, int(round(duration / self.h)))
        self.wrenches.append(Wrench(self.body_id(link), *values, steps_left=steps))
        self._set_xfrc()
        mujoco.mj_forward(self.m, self.d)

    def _point_world(self, w: Wrench) -> np.ndarray:
        return self.d.xpos[w.body] + self.d.xmat[w.body].reshape(3, 3) @ w.point

    def _set_xfrc(self):
        """xfrc_applied = each wrench moved to its body's centre of mass (MuJoCo's point):
        torque_com = torque + (p - c) x force."""
        self.d.xfrc_applied[:] = 0.0
        for w in self.wrenches:
            lever = self._point_world(w) - self.d.xipos[w.body]
            self.d.xfrc_applied[w.body, :3] += w.force
            self.d.xfrc_applied[w.body, 3:] += w.torque + np.cross(lever, w.force)

    def external_torques(self) -> np.ndarray:
        """True tau_ext (n,) at the current state: sum of J(p)^T [f; t] over the active
        wrenches plus efc_J^T efc_force over the contact rows (N*m or N)."""
        nv, nefc = self.m.nv, self.d.nefc
        total = np.zeros(nv)
        for w in self.wrenches:
            mujoco.mj_applyFT(self.m, self.d, w.force, w.torque, self._point_world(w),
                              w.body, total)
        if nefc:
            rows = np.isin(self.d.efc_type[:nefc], CONTACT_ROWS)
            J = self.d.efc_J[:nefc * nv].reshape(nefc, nv)
            total += J[rows].T @ self.d.efc_force[:nefc][rows]
        return total[self.dadr]
