"""RobotModel: a frozen rigid-body model built once from a URDF, and the algorithms over it.

Equation of motion (generalized coordinates q, one per revolute/continuous/prismatic
joint that is not a mimic joint, URDF depth-first order)::

    tau = M(q) qdd + C(q, qd) qd + g(q) + tau_fr(qd) - J_f(q)^T F_ext,
    M(q) = M_rigid(q) + diag(armature)

``armature`` (n,) is each joint's reflected rotor inertia (kg m^2, or kg for a prismatic
joint; :meth:`RobotModel.with_armature`, default 0): constant, so it changes M and every
term built from it (inverse and forward dynamics, kinetic energy, momentum M qd,
J M^-1 J^T and Lambda) but not C or g (Pinocchio's ``model.armature``).
``g`` is on the left-hand side (the torque that HOLDS the arm still, Pinocchio's sign);
``tau_fr`` the joint friction of :func:`friction_torque` (viscous, Coulomb per direction,
offset, optional smooth sign; by default the URDF's ``viscous * qd + coulomb * sign(qd)``);
``F_ext = [f; n]`` is the wrench the
environment applies to the arm at the origin of frame ``f``, in ROOT axes.

Frames are link names. Poses are ``X_root_frame`` (4x4). Jacobians are 6 x n with rows
``[v; w]`` of the frame ORIGIN in ROOT axes (Pinocchio's LOCAL_WORLD_ALIGNED).

Batches: every ``q`` of shape (n,) may be (N, n); results gain a leading N axis. The
other state arguments (qd, qdd, tau, f_ext) must then have the same leading N.

Thread safety: a model is immutable after construction (arrays are read-only, setting
attributes raises); every call allocates its own scratch and the numba kernels release
the GIL. ``with_*`` return new models sharing the parsed structure.

Threads: batched calls of gravity_torques, coriolis_torques, mass_matrix, jacobian and
compute_all spread their states over numba threads (prange) when the batch has at least
``MIN_STATES_PER_THREAD`` (256) states per thread; ``threads=`` on those calls, else
:func:`set_threads` (:mod:`.launch`), else the environment variable
``MANIP_DYNAMICS_THREADS``, else the CPUs idle at the call (the machine's CPUs minus the other
tasks running, from /proc/loadavg; at most numba's thread count) sets how many. A state's result is
the same bits whatever the thread count (each state runs the same code on its own scratch).

First call: the numba kernels are compiled on first use (a few seconds each, once per
machine thanks to ``cache=True``); call :meth:`RobotModel.warm_up` at start-up to pay it
before serving requests.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import (InputError, NonFiniteResultError, SingularConfigurationError,
                      UnknownFrameError)
from . import kernels as K
from .bodies import body_table
from .checks import (_NP_BOOL, _all_finite, _as_float, _flag, _real, _unit_direction,
                     _vector3)
from .inertia import describe_defect, inertia_defect
from .launch import _direct, _launch, _one_state
from .results import DynamicsTerms, InertiaEllipsoid, MomentumTerms, _BundleResult, _bundle_layout
from .urdf import Structure, parse_urdf

_NO_FEXT = np.zeros((0, 6))
_NO_MOMENTUM = np.zeros(0)
_NO_JACOBIAN = np.zeros((0, 6, 0))
_NO_POSE = np.zeros((0, 4, 4))          # batch_kinematics: the Jacobian alone
_EYE4 = np.eye(4)


def friction_torque(qd, viscous, coulomb, coulomb_negative, offset, width, slide=0.0):
    """Joint friction (N*m or N), per joint, broadcasting over qd (n,) or (N, n)::

        tau_fr = viscous qd + coulomb s(qd) [qd > 0] + coulomb_negative s(qd) [qd < 0] + offset
        s(qd) = tanh(qd / width) where width > 0, else sign(qd)   (s(0) = 0)

    slide (rad/s, scalar or (n,); 0: none): where > 0, s(qd) = clip(qd / slide, -1, 1)
    instead (the contact observer's Coulomb ramp, MomentumObserver's slide_speed).

    viscous (N*m*s/rad), coulomb, coulomb_negative (N*m, the magnitudes for qd > 0 and qd < 0;
    equal: the symmetric model), offset (N*m, any sign), width (rad/s) (n,) each. At qd = 0
    the torque is the offset. (docs/side_file.md; Mamedov et al. 2020 use viscous qd +
    coulomb sign(qd) + offset.)"""
    qd = np.asarray(qd, dtype=float)
    smooth = width > 0
    s = np.where(smooth, np.tanh(qd / np.where(smooth, width, 1.0)), np.sign(qd))
    ramped = np.asarray(slide, dtype=float) > 0
    if ramped.any():
        s = np.where(ramped, np.clip(qd / np.where(ramped, slide, 1.0), -1.0, 1.0), s)
    return viscous * qd + np.where(qd > 0, coulomb, coulomb_negative) * s + offset


def _tuple_names(xs):
    return ", ".join(repr(x) for x in xs)


class RobotModel:
    """Frozen rigid-body model of a fixed-base tree (see the module docstring).

    Build with :meth:`from_urdf_file` / :meth:`from_urdf_string`; never mutate: use
    :meth:`with_gravity`, :meth:`with_friction`, :meth:`with_armature`,
    :meth:`with_payload`, :meth:`without_payload` for modified copies.

    Example::

        model = RobotModel.from_urdf_file("panda.urdf")
        q = np.zeros(model.n)
        g = model.gravity_torques(q)             # (n,) N*m / N holding the arm still
        M = model.mass_matrix(np.zeros((100, model.n)))   # (100, n, n)
    """

    __slots__ = ("_s", "_gravity", "_viscous", "_coulomb", "_armature", "_payloads", "_inert",
                 "_bodies", "_shape1", "_shapeM", "_shapeJ", "_frames", "_coulomb_negative",
                 "_friction_offset", "_friction_width")

    # ------------------------------------------------------------------ construction
    def __init__(self, structure: Structure, gravity=(0.0, 0.0, -9.81), viscous=None,
                 coulomb=None, payloads=None, inert=None, armature=None, coulomb_negative=None,
                 friction_offset=None, friction_width=None):
        set_ = object.__setattr__
        n = len(structure.joint_names)
        zeros = np.zeros(n)
        zeros.setflags(write=False)
        armature = zeros if armature is None else armature
        set_(self, "_friction_offset", zeros if friction_offset is None else friction_offset)
        set_(self, "_friction_width", zeros if friction_width is None else friction_width)
        set_(self, "_s", structure)
        set_(self, "_gravity", _vector3(gravity, "gravity"))
        set_(self, "_viscous", structure.viscous if viscous is None else viscous)
        set_(self, "_coulomb", structure.coulomb if coulomb is None else coulomb)
        set_(self, "_coulomb_negative", self._coulomb if coulomb_negative is None
             else coulomb_negative)
        set_(self, "_armature", armature)
        set_(self, "_payloads", dict(payloads or {}))
        set_(self, "_inert", structure.inert if inert is None else inert)
        set_(self, "_bodies", body_table(structure, self._inert, armature))  # the kernels read it
        set_(self, "_shape1", (n,))                  # the shape of one q, of one M, of one J
        set_(self, "_shapeM", (n, n))
        set_(self, "_shapeJ", (6, n))
        set_(self, "_frames", structure.frames)     # name -> (body, X_body_frame)

    def __setattr__(self, name, value):
        raise AttributeError("RobotModel is immutable; use the with_* methods for a modified copy")

    @classmethod
    def from_urdf_string(cls, xml: str, root_link: str | None = None, gravity=(0.0, 0.0, -9.81)):
        """Parse a URDF string. Raises URDFError / UnsupportedJointError naming the element at
        fault; warns (InertiaWarning, MasslessLinkWarning: once each, see core/dynamics/urdf.py)."""
        if not isinstance(xml, str):
            raise InputError(f"xml must be a str, got {type(xml).__name__}")
        return cls(parse_urdf(xml, root_link), gravity)

    @classmethod
    def from_urdf_file(cls, path, root_link: str | None = None, gravity=(0.0, 0.0, -9.81),
                       xacro_args=None, package_paths=None):
        """Parse the URDF or xacro file at ``path`` (xacro expanded with ``xacro_args``,
        ``$(find pkg)`` through ``package_paths``: :func:`~manip_dynamics.core.dynamics.description.
        load_description`; then :meth:`from_urdf_string`)."""
        from .description import load_description
        return cls.from_urdf_string(load_description(path, xacro_args, package_paths),
                                    root_link, gravity)

    def _copy(self, **changes):
        kw = dict(gravity=self._gravity, viscous=self._viscous, coulomb=self._coulomb,
                  payloads=self._payloads, inert=self._inert, armature=self._armature,
                  coulomb_negative=self._coulomb_negative, friction_offset=self._friction_offset,
                  friction_width=self._friction_width)
        kw.update(changes)
        return RobotModel(self._s, **kw)

    # ------------------------------------------------------------------ properties
    n = property(lambda self: len(self._s.joint_names), doc="number of coordinates")
    joint_names = property(lambda self: self._s.joint_names, doc="joint names in q order")
    root_link = property(lambda self: self._s.root_link)
    frame_names = property(lambda self: self._s.frame_names, doc="all links below the root (incl.)")
    default_tip = property(lambda self: self._s.default_tip,
                           doc="leaf link at the end of the longest chain")
    effort_limits = property(lambda self: self._s.effort_limits)
    velocity_limits = property(lambda self: self._s.velocity_limits)
    position_lower = property(lambda self: self._s.position_lower)
    position_upper = property(lambda self: self._s.position_upper)
    viscous = property(lambda self: self._viscous, doc="(n,) N*m*s/rad (or N*s/m)")
    coulomb = property(lambda self: self._coulomb, doc=(
        "(n,) N*m (or N): the Coulomb friction for qd > 0 (both directions when "
        "coulomb_negative equals it, the default)"))
    coulomb_negative = property(lambda self: self._coulomb_negative, doc=(
        "(n,) N*m (or N), >= 0: the Coulomb friction's magnitude for qd < 0 (the torque is "
        "-coulomb_negative there); equal to coulomb unless given"))
    friction_offset = property(lambda self: self._friction_offset, doc=(
        "(n,) N*m (or N), any sign: a constant added to the friction torque (default 0)"))
    friction_width = property(lambda self: self._friction_width, doc=(
        "(n,) rad/s (or m/s), >= 0: the smooth sign's width, tanh(qd / width) in place of "
        "sign(qd); 0 (default): sign(qd)"))
    armature = property(lambda self: self._armature, doc=(
        "(n,) reflected rotor inertia per joint, kg*m^2 (or kg), added to M's diagonal "
        "(read-only; :meth:`with_armature`)"))
    mimic_joint_names = property(lambda self: tuple(
        j for j in self._s.full_joint_names if j not in self._s.joint_names))

    @property
    def gravity(self):
        """(3,) gravity acceleration in the root frame, m/s^2 (read-only copy)."""
        return self._gravity

    @property
    def payloads(self):
        """dict frame -> (mass, com (3,) in frame axes, inertia (3, 3) about com, frame axes)."""
        return dict(self._payloads)

    # ---- moving bodies (identification, manip_dynamics.core.identification.regressor)
    body_links = property(lambda self: self._s.body_links, doc=(
        "link of each moving body, depth-first: the child link of each revolute / continuous / "
        "prismatic joint (mimic joints included); links below it on fixed joints are lumped into "
        "it. The body frame is that link's frame."))

    body_joint_names = property(lambda self: self._s.full_joint_names, doc=(
        "the joint moving each body of body_links (same order; mimic joints included)"))

    @property
    def body_table(self):
        """The body table the numba kernels read (not a copy; read-only): a (nb,)
        structured array of dtype ``core.dynamics.bodies.BODY``, one row per moving body in
        :attr:`body_links` order, with fields parent, jtype, q_index (int64), axis (3,),
        R_tree (3, 3), p_tree (3,) (the joint's placement in its parent body's frame, m),
        mimic_multiplier, mimic_offset, mass (kg), com (3,) m and I_com (3, 3) kg m^2 in
        body axes, lumped links and payloads included (the fields: bodies.py). For kernels
        outside the core that take the model's bodies (manip_dynamics.safety);
        :meth:`body_inertias` gives the inertias as plain copies."""
        return self._bodies

    def frame_body(self, frame):
        """(b, X_body_frame): index into body_links of the body carrying link ``frame`` (-1 if
        fixed to the root) and the link's constant 4x4 pose in that body's frame (a copy)."""
        b, X = self._frame(frame)
        return b, X.copy()

    def body_inertias(self):
        """(mass (nb,), com (nb, 3), I_com (nb, 3, 3)) of each body, lumped links and payloads
        included; com and I_com (about the com) in the body frame's axes. Copies."""
        inert = self._inert
        return inert[:, 0].copy(), inert[:, 1:4].copy(), inert[:, 4:13].reshape(-1, 3, 3).copy()

    def __repr__(self):
        return (f"RobotModel(n={self.n}, root={self.root_link!r}, tip={self.default_tip!r}, "
                f"joints={self.joint_names})")

    # ------------------------------------------------------------------ modified copies
    def with_gravity(self, g):
        """Copy with gravity vector g (3,) m/s^2 in the root frame."""
        return self._copy(gravity=g)

    def with_friction(self, viscous=None, coulomb=None, coulomb_negative=None, offset=None,
                      width=None):
        """Copy with friction coefficients (each a scalar or (n,) in q order; None keeps):
        viscous N*m*s/rad >= 0; coulomb N*m >= 0 (both directions, unless coulomb_negative
        gives the one for qd < 0: then coulomb is the one for qd > 0); coulomb_negative
        N*m >= 0; offset N*m, any finite value; width rad/s >= 0 (the smooth sign
        tanh(qd / width); 0: sign(qd)). The torque: :func:`friction_torque`."""
        kw = {name: self._per_joint(v, name) for name, v in
              (("viscous", viscous), ("coulomb", coulomb), ("coulomb_negative",
               coulomb_negative), ("friction_width", width)) if v is not None}
        if coulomb is not None and coulomb_negative is None:
            kw["coulomb_negative"] = kw["coulomb"]
        if offset is not None:
            kw["friction_offset"] = self._per_joint(offset, "offset", signed=True)
        return self._copy(**kw)

    def with_armature(self, armature):
        """Copy with the joints' reflected rotor inertias (scalar or (n,) in q order, finite,
        >= 0; kg*m^2 for a revolute joint, kg for a prismatic one): M(q) = M_rigid(q) +
        diag(armature) in every algorithm (module docstring). A motor of rotor inertia I_r
        behind a gear of ratio k reflects k^2 I_r. Only the body table is rebuilt."""
        return self._copy(armature=self._per_joint(armature, "armature"))

    def _per_joint(self, v, name, signed=False):
        """v as a read-only (n,) float array (a scalar broadcast), each entry finite and >= 0
        (any finite value if ``signed``); InputError naming the joint otherwise."""
        a = _as_float(v, name)
        a = np.broadcast_to(a, (self.n,)).copy() if a.ndim == 0 else a.copy()
        if a.shape != (self.n,):
            raise InputError(f"{name} must be a scalar or shape ({self.n},), got {a.shape}")
        bad = ~np.isfinite(a) | (False if signed else (a < 0))
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"{name}[{i}] (joint {self.joint_names[i]!r}) = {a[i]} "
                             f"must be finite{'' if signed else ' and >= 0'}")
        a.setflags(write=False)
        return a

    def with_payload(self, frame, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """Copy with a rigid payload at ``frame`` (replacing one already there).

        mass kg >= 0; com (3,) m in frame axes; inertia (3, 3) kg*m^2 about the com in frame
        axes, symmetric positive semi-definite (default zero: point mass). Only the body
        inertias are recomputed (no re-parsing). A payload on a link fixed to the root is
        recorded but has no dynamic effect (fixed base).
        """
        self._frame(frame)
        m = _real(mass, "mass")
        if not np.isfinite(m) or m < 0:
            raise InputError(f"payload mass must be finite and >= 0, got {m}")
        c = _vector3(com, "com")
        I = np.zeros((3, 3)) if inertia is None else _as_float(inertia, "inertia")
        if I.shape != (3, 3) or not np.isfinite(I).all():
            raise InputError(f"payload inertia must be a finite (3, 3) array, got shape {I.shape}")
        if not np.allclose(I, I.T, atol=1e-12, rtol=1e-9):
            raise InputError("payload inertia must be symmetric")
        defect = inertia_defect(I)                  # core/dynamics/inertia.py: the one rule
        if defect is not None:
            raise InputError(f"payload inertia is {describe_defect(*defect)}: no rigid body "
                             "has it")
        c.setflags(write=False)
        I = I.copy()
        I.setflags(write=False)
        payloads = dict(self._payloads)
        payloads[frame] = (m, c, I)
        with np.errstate(all="ignore"):
            inert = self._inertias_with(payloads)
        if not np.isfinite(inert).all():
            raise InputError(f"payload at {frame!r} (mass {m}, com {c}) overflows the body "
                             "inertia to inf/NaN")
        return self._copy(payloads=payloads, inert=inert)

    def without_payload(self, frame=None):
        """Copy without the payload at ``frame`` (None: without any). No payload there: same model."""
        if frame is None:
            payloads = {}
        else:
            self._frame(frame)
            payloads = {k: v for k, v in self._payloads.items() if k != frame}
        return self._copy(payloads=payloads, inert=self._inertias_with(payloads))

    def _inertias_with(self, payloads):
        inert = self._s.inert.copy()
        for frame, (mp, cp, Ip) in payloads.items():
            fb, X = self._s.frames[frame]
            if fb < 0 or mp == 0 and not Ip.any():
                continue
            m, c, I = inert[fb, 0], inert[fb, 1:4], inert[fb, 4:13].reshape(3, 3)
            R = X[:3, :3]
            c2, I2 = R @ cp + X[:3, 3], R @ Ip @ R.T
            mt = m + mp
            ct = (m * c + mp * c2) / mt if mt > 0 else np.zeros(3)
            It = np.zeros((3, 3))
            for mi, ci, Ii in ((m, c, I), (mp, c2, I2)):
                d = ci - ct
                It += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
            inert[fb, 0], inert[fb, 1:4], inert[fb, 4:13] = mt, ct, It.ravel()
        inert.setflags(write=False)
        return inert

    # ------------------------------------------------------------------ input helpers
    def _frame(self, frame):
        try:
            return self._frames[frame]
        except (KeyError, TypeError):
            raise self._unknown_frame(frame) from None

    def _unknown_frame(self, frame):
        return UnknownFrameError(
            f"unknown frame {frame!r}; frames of this model: {_tuple_names(self.frame_names)}")

    def _states(self, x, name, like=None, finite=True):
        """-> (contiguous (N, n) float array, single?) with shape checks, and the finite check
        unless ``finite`` is False (kernels that count non-finite states themselves: then
        :meth:`_raise_nonfinite` names the culprit)."""
        shape1 = self._shape1
        if not finite and (like is None or like == shape1) and _one_state(x, shape1):
            return x[None], True           # fast path: one contiguous state, as given
        n = shape1[0]
        a = _as_float(x, name)
        if like is not None:
            if a.shape != like:
                raise InputError(f"{name} must have the shape of q {like}, got {a.shape}")
        elif not (a.ndim == 1 and a.shape[0] == n or a.ndim == 2 and a.shape[1] == n):
            raise InputError(f"{name} must have shape ({n},) or (N, {n}), got {a.shape}")
        single = a.ndim == 1
        Q = np.ascontiguousarray(a[None] if single else a)
        if finite and not _all_finite(Q):
            idx = np.argwhere(~np.isfinite(a))[0]
            where = f"{name}[{', '.join(map(str, idx))}]"
            raise InputError(f"{where} (joint {self.joint_names[idx[-1]]!r}) is {a[tuple(idx)]}")
        return Q, single

    def _fext(self, f_ext, f_ext_frame, N, single):
        if f_ext is None:
            if f_ext_frame is not None:
                self._frame(f_ext_frame)
            return -1, _EYE4, _NO_FEXT
        if f_ext_frame is None:
            raise InputError("f_ext given without f_ext_frame")
        fb, X = self._frame(f_ext_frame)
        f = _as_float(f_ext, "f_ext")
        if f.shape not in ((6,), (N, 6)) or (single and f.shape != (6,)):
            raise InputError("f_ext must have shape (6,)" + ("" if single else f" or ({N}, 6)")
                             + f", got {f.shape}")
        if not np.isfinite(f).all():
            idx = np.argwhere(~np.isfinite(f))[0]
            raise InputError(f"f_ext[{', '.join(map(str, idx))}] is {f[tuple(idx)]}")
        return fb, X, np.ascontiguousarray(np.broadcast_to(f, (N, 6)))

    @staticmethod
    def _out(a, single):
        return a[0] if single else a

    def _overflow(self, what, s, inputs):
        """NonFiniteResultError for a result that overflowed to inf/NaN at state s, naming the largest
        entry of each state argument (inputs: name -> (N, n) array)."""
        parts = []
        for name, a in inputs.items():
            if a is None or a.size == 0:
                continue
            row = np.abs(a[s])
            j = int(np.argmax(row))
            if row[j] == 0:
                continue
            joint = f", joint {self.joint_names[j]!r}" if row.shape[0] == self.n else ""
            parts.append(f"max |{name}| = {row[j]:.3g} ({name}[{j}]{joint})")
        return NonFiniteResultError(
            f"{what} overflowed to inf/NaN at state {s}: the inputs are too large ("
            + "; ".join(parts) + ") or the model's gravity / inertias are")

    def _raise_nonfinite(self, what, out, single, **inputs):
        """A kernel counted non-finite states: raise InputError naming the first non-finite
        input entry (as _states would have), else NonFiniteResultError for ``out``."""
        for name, a in inputs.items():
            self._states(a[0] if single else a, name)
        self._finite(out, what, **inputs)
        raise NonFiniteResultError(f"{what}: a result is not finite")

    def _finite(self, out, what, **inputs):
        """out, or NonFiniteResultError (never a silent inf/NaN) if it is not finite."""
        if not _all_finite(out):
            bad = ~np.isfinite(out.reshape(out.shape[0], -1)).all(axis=1)
            raise self._overflow(what, int(np.argmax(bad)), inputs)
        return out

    # ------------------------------------------------------------------ joint-state helper
    def vector_from_names(self, names, values, field="position", allow_extra=True):
        """Map a (names, values) pair (as in sensor_msgs/JointState) to an (n,) vector in q order.

        Raises InputError naming: wrong lengths, duplicate names, missing joints, unknown
        names (only if allow_extra is False; mimic joints are always accepted and ignored),
        and the joint whose value is not finite. ``field`` only labels the messages.
        """
        if names is None or isinstance(names, (str, bytes)):
            raise InputError(f"{field}: names must be a sequence of joint names, got {names!r}")
        names = list(names)
        bad = [nm for nm in names if not isinstance(nm, str)]
        if bad:
            raise InputError(f"{field}: joint names must be str, got {bad[0]!r}")
        if values is None or isinstance(values, (str, bytes)):
            raise InputError(f"{field}: values must be a sequence of numbers, got {values!r}")
        vals = _as_float(values, field)
        if vals.ndim != 1:
            raise InputError(f"{field}: values must be 1-D, got shape {vals.shape}")
        if len(vals) != len(names):
            raise InputError(f"{field}: {len(names)} names but {len(vals)} values")
        index = {}
        dups = []
        for i, nm in enumerate(names):
            if nm in index:
                dups.append(nm)
            index[nm] = i
        if dups:
            raise InputError(f"{field}: duplicate joint names {_tuple_names(dict.fromkeys(dups))}")
        missing = [j for j in self.joint_names if j not in index]
        if missing:
            raise InputError(f"{field}: missing joints {_tuple_names(missing)}")
        if not allow_extra:
            known = set(self._s.full_joint_names)
            extra = [nm for nm in names if nm not in known]
            if extra:
                raise InputError(f"{field}: unknown joints {_tuple_names(extra)}")
        out = vals[[index[j] for j in self.joint_names]]
        bad = ~np.isfinite(out)
        if bad.any():
            j = self.joint_names[int(np.argmax(bad))]
            raise InputError(f"{field}: joint {j!r} has non-finite value {out[bad][0]}")
        return out

    # ------------------------------------------------------------------ dynamics terms
    def gravity_torques(self, q, threads=None):
        """g(q) (n,): the generalized force that holds the arm still, dU/dq. N*m or N.
        (N, n) states -> (N, n), over ``threads`` threads (see the module docstring)."""
        if threads is None and _one_state(q, self._shape1):
            out = np.empty(self._shape1)
            if not _direct(K.one_gravity, (self._bodies, self._gravity, q, out)):
                return out          # (not finite: the general path below names the entry)
        Q, single = self._states(q, "q", finite=False)
        out = np.empty(Q.shape)
        if _launch(K.batch_gravity, K.batch_gravity_threads, threads, Q.shape[0],
                   self._bodies, self._gravity, Q, out):
            self._raise_nonfinite("g(q)", out, single, q=Q)
        return out[0] if single else out

    def coriolis_torques(self, q, qd, threads=None):
        """C(q, qd) qd (n,): Coriolis and centrifugal torques (RNEA with qdd = 0, no gravity).
        (N, n) states -> (N, n), over ``threads`` threads (see the module docstring)."""
        if threads is None and _one_state(q, self._shape1) and _one_state(qd, self._shape1):
            out = np.empty(self._shape1)
            if not _direct(K.one_coriolis, (self._bodies, q, qd, out)):
                return out          # (not finite: the general path below names the entry)
        Q, single = self._states(q, "q", finite=False)
        QD, _ = self._states(qd, "qd", like=np.shape(q), finite=False)
        out = np.empty(Q.shape)
        if _launch(K.batch_coriolis, K.batch_coriolis_threads, threads, Q.shape[0],
                   self._bodies, Q, QD, out):
            self._raise_nonfinite("C(q, qd) qd", out, single, q=Q, qd=QD)
        return out[0] if single else out

    def coriolis_matrix(self, q, qd):
        """C(q, qd) (n, n), the Christoffel-symbol factorization: C qd = coriolis_torques,
        dM/dt = C + C^T (so dM/dt - 2C is skew-symmetric)."""
        Q, single = self._states(q, "q")
        QD, _ = self._states(qd, "qd", like=np.shape(q))
        out = np.empty((Q.shape[0], self.n, self.n))
        K.batch_coriolis_matrix(self._bodies, Q, QD, out)
        return self._out(self._finite(out, "C(q, qd)", q=Q, qd=QD), single)

    def mass_matrix(self, q, threads=None):
        """M(q) (n, n), symmetric positive definite joint-space inertia (CRBA). kg*m^2 / kg.
        (N, n) states -> (N, n, n), over ``threads`` threads (see the module docstring)."""
        if threads is None and _one_state(q, self._shape1):
            out = np.empty(self._shapeM)
            if not _direct(K.one_mass, (self._bodies, q, out)):
                return out          # (not finite: the general path below names the entry)
        Q, single = self._states(q, "q", finite=False)
        n = Q.shape[1]
        out = np.empty((Q.shape[0], n, n))
        if _launch(K.batch_mass, K.batch_mass_threads, threads, Q.shape[0], self._bodies, Q,
                   out):
            self._raise_nonfinite("M(q)", out, single, q=Q)
        return out[0] if single else out

    @property
    def friction_coefficients(self):
        """(5, n) rows viscous, coulomb, coulomb_negative, offset, width (a new array): the
        arguments of :func:`friction_torque`, as the observer's kernel reads them."""
        return np.array([self._viscous, self._coulomb, self._coulomb_negative,
                         self._friction_offset, self._friction_width], dtype=float)

    def _friction(self, QD):
        with np.errstate(over="ignore", invalid="ignore"):     # overflow is reported by callers
            return friction_torque(QD, self._viscous, self._coulomb, self._coulomb_negative,
                                   self._friction_offset, self._friction_width)

    def friction_torques(self, qd):
        """tau_fr(qd) (n,) or (N, n) of :func:`friction_torque` with the model's coefficients
        (by default viscous * qd + coulomb * sign(qd), sign(0) = 0)."""
        QD, single = self._states(qd, "qd")
        out = self._friction(QD)
        return self._out(self._finite(out, "tau_fr(qd)", qd=QD), single)

    def inverse_dynamics(self, q, qd, qdd, friction=False, f_ext=None, f_ext_frame=None):
        """tau = M qdd + C qd + g [+ tau_fr(qd)] - J_f^T F_ext (RNEA), (n,).

        f_ext (6,) or (N, 6): wrench [f; n] applied TO the arm at the origin of f_ext_frame,
        root axes (N, N*m)."""
        Q, single = self._states(q, "q")
        QD, _ = self._states(qd, "qd", like=np.shape(q))
        QDD, _ = self._states(qdd, "qdd", like=np.shape(q))
        fb, X, F = self._fext(f_ext, f_ext_frame, Q.shape[0], single)
        out = np.empty_like(Q)
        K.batch_rnea(self._bodies, self._gravity, Q, QD, QDD, fb, X, F, out)
        if _flag(friction, "friction"):
            out += self._friction(QD)
        return self._out(self._finite(out, "inverse dynamics tau", q=Q, qd=QD, qdd=QDD,
                                      f_ext=F), single)

    def forward_dynamics(self, q, qd, tau, friction=False, f_ext=None, f_ext_frame=None):
        """qdd = M^-1 (tau - C qd - g [- tau_fr(qd)] + J_f^T F_ext) by Cholesky solves, (n,).

        Raises SingularConfigurationError if M is not positive definite (a joint that
        moves no mass and no inertia)."""
        Q, single = self._states(q, "q")
        QD, _ = self._states(qd, "qd", like=np.shape(q))
        TAU, _ = self._states(tau, "tau", like=np.shape(q))
        fb, X, F = self._fext(f_ext, f_ext_frame, Q.shape[0], single)
        if _flag(friction, "friction"):
            TAU = TAU - self._friction(QD)
        out = np.empty_like(Q)
        status = np.zeros(Q.shape[0], dtype=np.int64)
        K.batch_forward_dynamics(self._bodies, self._gravity, Q, QD, TAU, fb, X, F, out, status)
        self._check_status(status, "forward dynamics qdd", q=Q, qd=QD, tau=TAU, f_ext=F)
        return self._out(out, single)

    def _check_status(self, status, what, **inputs):
        """Kernel status per state: K.OK, K.NOT_POSITIVE_DEFINITE (M), K.OVERFLOW."""
        if np.count_nonzero(status):         # (much cheaper than .any() for a few states)
            s = int(np.argmax(status))
            if status[s] == K.OVERFLOW:
                raise self._overflow(what, s, inputs)
            d = np.diagonal(self.mass_matrix(inputs["q"][s]))
            still = [j for j, x in zip(self.joint_names, d) if x <= 1e-12 * max(d.max(), 1e-300)]
            raise SingularConfigurationError(
                f"mass matrix is not positive definite (state {s}): some joint moves no mass "
                f"or inertia; joints moving none about their axis here (M_ii = 0): "
                f"{_tuple_names(still) or 'none alone'}; joints with a massless subtree: "
                f"{_tuple_names(self._massless_joints()) or 'none'}")

    def _massless_joints(self):
        """Joints whose subtree has neither mass nor rotational inertia (M loses rank)."""
        bodies = self._bodies
        sub = bodies["mass"] + np.abs(bodies["I_com"]).sum(axis=(1, 2))
        for i in range(len(sub) - 1, -1, -1):
            if bodies[i]["parent"] >= 0:
                sub[bodies[i]["parent"]] += sub[i]
        return [self._s.full_joint_names[i] for i in range(len(sub)) if sub[i] == 0]

    # ------------------------------------------------------------------ kinematics
    def frame_pose(self, q, frame):
        """X_root_frame (4, 4): pose of ``frame`` (a link) in the root frame, translation in m.

        q (n,) or (N, n) -> (4, 4) or (N, 4, 4)."""
        Q, single = self._states(q, "q", finite=False)
        fb, X = self._frame(frame)
        pose = np.empty((Q.shape[0], 4, 4))
        if K.batch_kinematics(self._bodies, Q, fb, X, pose, _NO_JACOBIAN):
            self._raise_nonfinite(f"pose of {frame!r}", pose, single, q=Q)
        return pose[0] if single else pose

    def jacobian(self, q, frame, threads=None):
        """J (6, n): [v; w] = J qd, v (m/s) the velocity of the frame ORIGIN, w (rad/s), both
        in ROOT axes (Pinocchio's LOCAL_WORLD_ALIGNED). q (N, n) -> (N, 6, n), over
        ``threads`` threads (see the module docstring)."""
        try:                                   # (_frame, inline: a fifth of a J call)
            fb, X = self._frames[frame]
        except (KeyError, TypeError):
            raise self._unknown_frame(frame) from None
        if threads is None and _one_state(q, self._shape1):
            J = np.empty(self._shapeJ)
            if not _direct(K.one_jacobian, (self._bodies, q, fb, X, J)):
                return J            # (not finite: the general path below names the entry)
        Q, single = self._states(q, "q", finite=False)
        N, n = Q.shape
        J = np.empty((N, 6, n))
        if _launch(K.batch_kinematics, K.batch_kinematics_threads, threads, N, self._bodies, Q,
                   fb, X, _NO_POSE, J):
            self._raise_nonfinite(f"Jacobian of {frame!r}", J, single, q=Q)
        return J[0] if single else J

    def frame_bias_acceleration(self, q, qd, frame):
        """Jdot qd (6,): the frame origin's classical acceleration [a; alpha] (m/s^2, rad/s^2) at
        qdd = 0, root axes (not the spatial acceleration). (N, n) states -> (N, 6)."""
        Q, single = self._states(q, "q")
        QD, _ = self._states(qd, "qd", like=np.shape(q))
        fb, X = self._frame(frame)
        out = np.empty((Q.shape[0], 6))
        K.batch_bias_acceleration(self._bodies, Q, QD, fb, X, out)
        return self._out(self._finite(out, f"Jdot qd of {frame!r}", q=Q, qd=QD), single)

    # ------------------------------------------------------------------ energies
    def kinetic_energy(self, q, qd):
        """T = 1/2 qd^T M(q) qd (the rotors' 1/2 armature qd^2 included), J. () per state,
        (N,) for a batch."""
        return self._energy(q, qd)[..., 0]

    def potential_energy(self, q):
        """U = -sum_k m_k g . c_k (root origin as reference), J; g(q) = dU/dq. () or (N,)."""
        return self._energy(q, None)[..., 1]

    def _energy(self, q, qd):
        Q, single = self._states(q, "q")
        QD = np.zeros_like(Q) if qd is None else self._states(qd, "qd", like=np.shape(q))[0]
        out = np.empty((Q.shape[0], 2))
        K.batch_energy(self._bodies, self._gravity, Q, QD, out)
        return self._out(self._finite(out, "energy", q=Q, qd=QD), single)

    # ------------------------------------------------------------------ task-space inertia
    def _bundle(self, q, qd, frame, *, linear_only=False, damping=0.0, damping_condition=0.0,
                bias=False, operational=False, eigenvectors=False, momentum=False,
                threads=None):
        """One run of K.batch_bundle -> _BundleResult (named views of its output buffer).

        Always M, J, A, Lambda, condition_number, singular; ``bias``: also g and c = C qd
        (qd required); ``operational``: also mu and p; ``eigenvectors``: also the
        eigen-decomposition of A (eigenvalues, eigenvectors); ``momentum``: also
        momentum = M qd and ctqd = C^T qd (and g, c)."""
        Q, single = self._states(q, "q", finite=False)
        needs_qd = bias or operational or momentum
        if needs_qd and qd is None:
            raise InputError("qd is required (shape of q); pass zeros for a state at rest")
        like = Q.shape[1:] if single else Q.shape           # np.shape(q), already known
        QD = self._states(qd, "qd", like=like, finite=False)[0] if needs_qd else Q
        fb, X, k, d, dc = self._task_options(frame, linear_only, damping, damping_condition)
        N, n = Q.shape
        flags = ((K.BIAS if bias else 0) | (K.OPERATIONAL if operational else 0)
                 | (K.EIGENVECTORS if eigenvectors else 0) | (K.MOMENTUM if momentum else 0))
        layout, width = _bundle_layout(n, k)
        out = np.empty(N * width)        # every field asked for is written unless status != OK
        singular = np.empty(N, dtype=np.bool_)
        status = np.empty(N, dtype=np.int64)
        _launch(K.batch_bundle, K.batch_bundle_threads, threads, N, self._bodies, self._gravity,
                Q, QD, fb, X, k, d, dc, flags, out, singular, status)
        if status[0] if N == 1 else np.count_nonzero(status):   # (the message costs more)
            if (status == K.BAD_INPUT).any():
                self._raise_nonfinite("q, qd", out, single, q=Q, qd=QD)
            self._check_status(status, f"J M^-1 J^T of {frame!r} (or g, C qd)", q=Q,
                               qd=QD if needs_qd else None)
        return _BundleResult(out, layout, N, single, singular)

    def _task_options(self, frame, linear_only, damping, damping_condition):
        """The task-space options of one bundle run, checked: (frame body, X_body_frame,
        k = 3 or 6 rows, damping, damping_condition)."""
        fb, X = self._frame(frame)
        d = _real(damping, "damping")
        if not math.isfinite(d) or d < 0:
            raise InputError(f"damping must be finite and >= 0, got {d}")
        dc = _real(damping_condition, "damping_condition")
        if math.isnan(dc) or dc < 0:
            raise InputError(f"damping_condition must be >= 0, got {dc}")
        return fb, X, 3 if _flag(linear_only, "linear_only") else 6, d, dc

    def _raise_if_singular(self, sing, cond, frame):
        if np.count_nonzero(sing):
            sing, cond = np.atleast_1d(sing, cond)
            s = int(np.argmax(sing))
            raise SingularConfigurationError(
                f"J M^-1 J^T of frame {frame!r} is singular (condition number "
                f"{cond[s]:.3g} > {K.SINGULAR_COND:.0e}, state {s}); pass damping > 0 "
                "for a damped inverse, or use inverse_effective_inertia / inertia_ellipsoid")

    def inverse_effective_inertia(self, q, frame, linear_only=False):
        """A = J M^-1 J^T (6, 6) or (3, 3) with linear_only, by Cholesky solves against M.

        J of the frame origin in root axes ([v; w] rows); units 1/kg (linear block),
        1/(kg m^2) (angular). Always finite (also at singularities, where it loses rank).
        (N, n) states -> (N, k, k)."""
        return self._bundle(q, None, frame, linear_only=linear_only).A

    def effective_inertia(self, q, frame, linear_only=False, damping=0.0, damping_condition=0.0):
        """Lambda = (J M^-1 J^T)^-1 (6, 6) or (3, 3): operational-space inertia of the frame origin,
        root axes, rows/columns [v; w]: kg (linear block), kg m^2 (angular). (N, n) -> (N, k, k).

        Singular A (cond > 1e12 or its Cholesky fails) raises SingularConfigurationError
        unless damping > 0, which returns V diag(s / (s^2 + damping^2)) V^T (finite).
        The damping applies only to the states with cond(A) > damping_condition (default
        0: every state); the others get the exact inverse by Cholesky solves."""
        r = self._bundle(q, None, frame, linear_only=linear_only, damping=damping,
                         damping_condition=damping_condition)
        if damping == 0:
            self._raise_if_singular(r.singular, r.condition_number, frame)
        return r.Lambda

    def inertia_ellipsoid(self, q, frame, linear_only=True):
        """Eigen-decomposition of Lambda -> InertiaEllipsoid (see its docstring). Never raises
        for singular states: singular directions get eigenvalue +inf."""
        return self._ellipsoid(self._bundle(q, None, frame, linear_only=linear_only,
                                            eigenvectors=True))

    def _ellipsoid(self, r):
        """InertiaEllipsoid from a bundle run with eigenvectors=True: Lambda's eigenvalues
        1 / s_i (s_i those of A, +inf for s_i <= 1e-12 s_max) ascending, eigenvectors as a
        proper rotation."""
        ev = r.eigenvalues
        k = ev.shape[-1]
        s = ev.reshape(-1, k)[:, ::-1]       # eigenvalues of A, descending
        V = r.eigenvectors.reshape(-1, k, k)[:, :, ::-1].copy()   # matching eigenvectors
        smax = s[:, :1]
        with np.errstate(divide="ignore"):
            lam = np.where(s > 1e-12 * smax, 1.0 / np.where(s > 0, s, 1.0), np.inf)
        flip = np.linalg.det(V) < 0
        V[flip, :, -1] *= -1.0
        return InertiaEllipsoid(self._out(lam, r.single), self._out(V, r.single),
                                r.condition_number, r.singular)

    def effective_mass(self, q, frame, u, point=None):
        """m_u = 1 / (u^T A u) along the direction u ((3,) linear or (6,) [v; w], root axes; scaled
        to unit length, any non-zero finite size), kg (or kg m^2 for a pure rotation). () or (N,).

        ``point`` (3,) m, in ``frame``'s axes (default its origin; u must then be (3,)): the
        mass felt at that point of the frame's body, A_p = J_p M^-1 J_p^T with
        J_p = [I, -[r]x] J (r = R_root_frame point, J of the frame origin): Khatib's
        operational-space inertia of the point, the "effective mass" of ISO/TS 15066.
        +inf where u lies in the singular subspace (u^T A u <= 1e-12 trace(A)): the arm
        cannot move that point along u."""
        u = _unit_direction(u, "u")
        if point is None:
            r = self._bundle(q, None, frame, linear_only=u.shape == (3,))
            single, A = r.single, r.A.reshape(-1, *r.A.shape[-2:])
        else:
            if u.shape != (3,):
                raise InputError(f"with a point, u must be a (3,) linear direction, got {u.shape}")
            p = _vector3(point, "point")
            r = self._bundle(q, None, frame)
            single, A6 = r.single, r.A.reshape(-1, 6, 6)
            R = self.frame_pose(q, frame).reshape(-1, 4, 4)[:, :3, :3]
            T = point_transform(R @ p)
            A = T @ A6 @ np.swapaxes(T, 1, 2)
        uau = np.einsum("i,nij,j->n", u, A, u)
        tr = np.trace(A, axis1=1, axis2=2)
        with np.errstate(divide="ignore"):
            m = np.where(uau > 1e-12 * tr, 1.0 / np.where(uau > 0, uau, 1.0), np.inf)
        return self._out(m, single)

    def operational_space(self, q, qd, frame, linear_only=False, damping=0.0):
        """(Lambda, mu, p): F = Lambda xdd + mu + p, mu = Lambda (J M^-1 C qd - Jdot qd),
        p = Lambda J M^-1 g. Shapes (k, k), (k,), (k,) (N leading for a batch); root axes,
        [f; n] rows (N, N*m). qd is required. Singular states raise as in effective_inertia
        unless damping > 0."""
        r = self._bundle(q, qd, frame, linear_only=linear_only, damping=damping, bias=True,
                         operational=True)
        if damping == 0:
            self._raise_if_singular(r.singular, r.condition_number, frame)
        return r.Lambda, r.mu, r.p

    def momentum_terms(self, q, qd, threads=None):
        """MomentumTerms(p, ct): p = M(q) qd and ct = C(q, qd)^T qd (n,) each, in O(n) per
        state (K.momentum_terms: subtree momenta, no n x n matrix). (N, n) states -> (N, n)
        each, over ``threads`` threads (see the module docstring)."""
        r = self._bundle(q, qd, self.default_tip, momentum=True, threads=threads)
        return MomentumTerms(r.momentum, r.ctqd)

    def compute_all(self, q, qd, frame, linear_only=False, damping=0.0, damping_condition=0.0,
                    ellipsoid=False, threads=None, momentum=False):
        """DynamicsTerms(g, c, M, J, A, Lambda, condition_number, singular) in one call.

        g = g(q), c = C(q, qd) qd (n,); M (n, n); J (k, n) of the frame origin in root axes;
        A = J M^-1 J^T and Lambda = A^-1 (k, k); k = 3 with linear_only else 6; a leading N
        for (N, n) states. qd is required.

        Never raises for singular states: Lambda is then the pseudo-inverse of A over the
        eigenvalues above 1e-12 of the largest (damping == 0) or the damped inverse, and
        ``singular`` is True. damping > 0 applies to the states with cond(A) >
        damping_condition (default 0: every state); the others get the exact inverse.
        (The dynamics node passes its ``singular_condition``: Lambda is exact unless the
        state is flagged near-singular.)

        ellipsoid=True: returns ``(DynamicsTerms, InertiaEllipsoid)`` from the same run
        (the ellipsoid of this ``linear_only``, as :meth:`inertia_ellipsoid` gives it).
        momentum=True: ``(DynamicsTerms, MomentumTerms)`` (p = M qd, ct = C^T qd, as
        :meth:`momentum_terms`) from the same run; with both: ``(terms, ellipsoid,
        momentum)``.

        (N, n) states run over ``threads`` threads (see the module docstring)."""
        if threads is None and ellipsoid is False and _one_state(q, self._shape1) \
                and _one_state(qd, self._shape1):
            terms = self._one_bundle(q, qd, frame, linear_only, damping, damping_condition,
                                     momentum is True)
            if terms is not None:
                return terms        # (else the general path below names what went wrong)
        want_ellipsoid = _flag(ellipsoid, "ellipsoid")
        want_momentum = _flag(momentum, "momentum")
        r = self._bundle(q, qd, frame, linear_only=linear_only, damping=damping,
                         damping_condition=damping_condition, bias=True,
                         eigenvectors=want_ellipsoid, momentum=want_momentum, threads=threads)
        out = (r.dynamics_terms(),) + ((self._ellipsoid(r),) if want_ellipsoid else ()) + (
            (MomentumTerms(r.momentum, r.ctqd),) if want_momentum else ())
        return out if len(out) > 1 else out[0]

    def _one_bundle(self, q, qd, frame, linear_only, damping, damping_condition, momentum):
        """compute_all of one contiguous float64 state through K.one_bundle (its outputs are
        returned as they are: no buffer views), ``(terms, MomentumTerms)`` with momentum;
        None when the state is not finite or its M or A fails, for the general path to
        name."""
        fb, X, k, d, dc = self._task_options(frame, linear_only, damping, damping_condition)
        n = self._shape1[0]
        g, c, M, J = (np.empty(self._shape1), np.empty(self._shape1), np.empty(self._shapeM),
                      np.empty(self._shapeJ if k == 6 else (3, n)))
        A, Lambda, cond = np.empty((k, k)), np.empty((k, k)), np.empty(1)
        p, ct = (np.empty(self._shape1), np.empty(self._shape1)) if momentum else (
            _NO_MOMENTUM, _NO_MOMENTUM)
        code = _direct(K.one_bundle, (self._bodies, self._gravity, q, qd, fb, X, d, dc, g, c,
                                      M, J, A, Lambda, cond, p, ct))
        if code > 1:
            return None
        terms = DynamicsTerms(g, c, M, J, A, Lambda, cond[0], _NP_BOOL[code])
        return (terms, MomentumTerms(p, ct)) if momentum else terms

    def warm_up(self):
        """Compile (or load from cache) every numba kernel once; returns self."""
        q = np.zeros(self.n)
        tip = self.default_tip
        for x in (q, q[None]):          # the one-state kernels, then the batched ones
            self.gravity_torques(x), self.coriolis_torques(x, x), self.mass_matrix(x)
            self.jacobian(x, tip)
        self.coriolis_matrix(q, q)
        self.inverse_dynamics(q, q, q, f_ext=np.zeros(6), f_ext_frame=tip)
        self.frame_pose(q, tip), self.frame_bias_acceleration(q, q, tip)
        self.kinetic_energy(q, q)
        for lin in (False, True):
            for x in (q, q[None]):      # the one-state bundle, then the batched one
                self.compute_all(x, x, tip, linear_only=lin)
            self.operational_space(q, q, tip, linear_only=lin, damping=1e-3)
        self.compute_all(q, q, tip, momentum=True)      # the observer's one-state bundle
        try:
            self.forward_dynamics(q, q, q)
        except SingularConfigurationError:
            pass
        self._warm_up_threads(tip)
        return self

    def _warm_up_threads(self, frame):
        """Compile the threaded kernels (numba's parallel entry points) on two states."""
        Q = np.zeros((2, self.n))
        fb, X = self._frame(frame)
        bodies, g = self._bodies, self._gravity
        K.batch_gravity_threads(bodies, g, Q, np.empty_like(Q), 2)
        K.batch_coriolis_threads(bodies, Q, Q, np.empty_like(Q), 2)
        K.batch_mass_threads(bodies, Q, np.empty((2, self.n, self.n)), 2)
        K.batch_kinematics_threads(bodies, Q, fb, X, np.empty((2, 4, 4)),
                                   np.empty((2, 6, self.n)), 2)
        for k in (6, 3):
            out = np.empty(2 * _bundle_layout(self.n, k)[1])
            K.batch_bundle_threads(bodies, g, Q, Q, fb, X, k, 0.0, 0.0, K.BIAS, out,
                                   np.empty(2, dtype=np.bool_), np.empty(2, dtype=np.int64), 2)


def point_transform(r):
    """T = [I, -[r]x] (3, 6), (N, 3, 6) for r (N, 3): v_p = T [v; w], the velocity of the
    point at offset r (root axes) from a frame origin moving with [v; w]."""
    r = np.atleast_2d(r)
    T = np.zeros((r.shape[0], 3, 6))
    T[:, 0, 0] = T[:, 1, 1] = T[:, 2, 2] = 1.0
    T[:, 0, 4], T[:, 0, 5] = r[:, 2], -r[:, 1]          # -[r]x = [[0, rz, -ry], ...]
    T[:, 1, 3], T[:, 1, 5] = -r[:, 2], r[:, 0]
    T[:, 2, 3], T[:, 2, 4] = r[:, 1], -r[:, 0]
    return T
