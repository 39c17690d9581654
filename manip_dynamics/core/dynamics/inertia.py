"""Rigid-body inertias: validity, combination, and the URDF inertia policy.

One module for every inertia rule of the package: the URDF parser (link inertias), the
model's payloads (``RobotModel.with_payload``), the node's ``payload.inertia`` parameter
(rules/dynamics_parameters.py) and identification's lumping all use it.

An inertia is ``(mass kg, com (3,) m, I_com (3, 3) kg m^2 about the com)`` in one frame.
Its principal moments ``I1 <= I2 <= I3`` (eigenvalues of ``I_com``) must be
positive semi-definite, and a rigid body's also satisfy the triangle inequality
``I3 <= I1 + I2``.

URDF policy (:func:`judge_link_inertias`), for the links of one description:

* links welded to the fixed root (by fixed joints only) never move in a fixed-base model:
  their inertia cannot enter M, C or g, so it is never judged; a defect there (negative
  mass, a negative principal moment) is reported in one InertiaWarning and ignored;
* a principal moment below ``-ROUND_OFF_REL * max|I_k| - ROUND_OFF_ABS`` is a negative
  moment. It is *negligible* when ``-I1 <= NEGLIGIBLE_REL * S``, with ``S`` the inertia
  scale of the robot (:func:`robot_inertia_scale`): the tensor is kept as written, so
  results equal those of Pinocchio, KDL and MoveIt, which load it unchanged, with one
  InertiaWarning naming the links. A larger negative moment is an error naming the link.
* a tensor that is positive semi-definite but violates the triangle inequality is kept as
  written with one InertiaWarning (common in exported URDFs).

Why ``NEGLIGIBLE_REL = 1e-3`` of ``S``: a negative moment ``-e`` changes M(q) by
``J_w^T R E R^T J_w`` with ``|E| = e``, i.e. by at most ``e`` per revolute joint between
the root and the link; at 1e-3 of the whole robot's inertia that is below the accuracy of
the inertias themselves (CAD exports and identified parameters are good to about 1 %). The
real defects in the wild are of this size: romeo_laas_small's hip links have
``I1 = -0.0027 kg m^2`` (4e-4 of its S = 6.7 kg m^2), TIAGo's antennas (welded to the
base) ``-3.5e-8 kg m^2``; sign errors and swapped entries, which change the dynamics, give
moments of the size of the link's own inertia, which for a link carrying a noticeable
share of the robot's inertia is above 1e-3 S (the threshold is a judgement, not a proof).
The rule does not prove M(q) positive definite at every q: a state where a kept defect
makes it indefinite is refused at that state (not positive definite), as for any model.
"""
from __future__ import annotations

import numpy as np

ROUND_OFF_REL = 1e-9      # of the largest |principal moment|: round-off, not a defect
ROUND_OFF_ABS = 1e-15     # kg m^2: exported URDFs carry entries like ixy = 1.4e-20
NEGLIGIBLE_REL = 1e-3     # of the robot's inertia scale S (module docstring)
INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def inertia_matrix(ixx, ixy, ixz, iyy, iyz, izz) -> np.ndarray:
    """The symmetric (3, 3) tensor of the six URDF entries (kg m^2)."""
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def principal_moments(I) -> np.ndarray:
    """Ascending eigenvalues (3,) of the symmetric inertia I (kg m^2)."""
    return np.linalg.eigvalsh(np.asarray(I, dtype=float))


def round_off(moments) -> float:
    """Tolerance (kg m^2) below which a negative principal moment is round-off."""
    return ROUND_OFF_REL * float(np.abs(moments).max()) + ROUND_OFF_ABS


def inertia_defect(I, tol=None):
    """None for a rigid body's inertia, else ``(kind, moments)``: kind ``"negative"`` (not
    positive semi-definite beyond ``tol``, default :func:`round_off`) or ``"triangle"``
    (I3 > I1 + I2 + tol). moments: ascending principal moments (3,)."""
    ev = principal_moments(I)
    tol = round_off(ev) if tol is None else tol
    if ev[0] < -tol:
        return "negative", ev
    if ev[2] > ev[0] + ev[1] + tol:
        return "triangle", ev
    return None


def describe_defect(kind, moments) -> str:
    """One phrase for a defect of :func:`inertia_defect` (used in every error message)."""
    ev = np.array2string(np.asarray(moments), precision=4)
    if kind == "negative":
        return f"not positive semi-definite (principal moments {ev})"
    return f"principal moments {ev} violate the triangle inequality (I1 + I2 >= I3)"


def transform(X, mass, com, I):
    """The inertia (mass, com, I_com) given in frame F, expressed in frame P; X = 4x4 pose of
    F in P: com_P = R com + p, I_P = R I R^T."""
    R = X[:3, :3]
    return mass, R @ com + X[:3, 3], R @ I @ R.T


def combine(parts):
    """Sum of rigid inertias given as (mass, com, I_com) in one frame (parallel axes):
    m = sum m_i, c = sum m_i c_i / m, I = sum I_i + m_i (|d_i|^2 1 - d_i d_i^T), d_i = c_i - c.
    An empty or massless sum has its com at the origin."""
    m = float(sum(p[0] for p in parts))
    c = sum(p[0] * p[1] for p in parts) / m if m > 0 else np.zeros(3)
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = ci - c
        I += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, np.asarray(c, dtype=float), I


def robot_inertia_scale(parts) -> float:
    """S (kg m^2): half the trace of the inertia of all the moving links together, about
    their common centre of mass, at the zero configuration (parts: (mass, com, I_com) in the
    root frame). Half the trace of a rigid body's inertia is at least its largest principal
    moment, so S is the largest moment of inertia the robot as a whole has, independent of
    where its root frame sits; links welded to the root are not part of it."""
    if not parts:
        return 0.0
    with np.errstate(all="ignore"):
        _, _, I = combine(parts)
    s = 0.5 * float(np.trace(I))
    return s if np.isfinite(s) and s > 0 else 0.0


def judge_link_inertias(links, scale):
    """The URDF policy (module docstring) over ``links``: [(name, welded, mass, I_com)],
    ``welded`` True for a link welded to the fixed root; scale = S of
    :func:`robot_inertia_scale`. Returns ``(errors, notes)``: errors [(name, message)] of
    the links that must be refused; notes: phrases for the one InertiaWarning (links kept
    as written, links ignored)."""
    errors, ignored, kept, triangle = [], [], [], []
    for name, welded, mass, I in links:
        found = inertia_defect(I)
        if welded:
            if mass < 0 or found is not None and found[0] == "negative":
                ignored.append(f"'{name}'")
            continue
        if mass < 0:
            errors.append((name, f"negative mass {mass}"))
        elif found is None:
            continue
        elif found[0] == "triangle":
            triangle.append(f"'{name}' {np.array2string(found[1], precision=4)}")
        elif -found[1][0] <= NEGLIGIBLE_REL * scale:
            kept.append(f"'{name}' {np.array2string(found[1], precision=4)}")
        else:
            errors.append((name, describe_defect(*found) + f": the negative moment is "
                           f"{-found[1][0] / scale if scale > 0 else np.inf:.2g} of the "
                           f"robot's inertia scale S = {scale:.4g} kg m^2, above the "
                           f"negligible {NEGLIGIBLE_REL:g} S"))
    notes = []
    if ignored:
        notes.append("links welded to the fixed root carry no dynamics, their negative mass "
                     "or inertia is ignored: " + ", ".join(ignored))
    if kept:
        notes.append(f"negative principal moments below {NEGLIGIBLE_REL:g} of the robot's "
                     f"inertia scale (S = {scale:.4g} kg m^2) are kept as written: "
                     + ", ".join(kept))
    if triangle:
        notes.append("link inertias violate the triangle inequality (no rigid body has them; "
                     "loaded as given): " + ", ".join(triangle))
    return errors, notes
