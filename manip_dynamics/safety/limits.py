"""ISO/TS 15066 Annex A: the permissible relative speed of a transient contact.

The energy a contact may transfer to a body region is E = F^2 / (2 k) (a linear spring
of stiffness k loaded to the permissible force F), and the kinetic energy of the two-body
collision at relative speed v is E = 1/2 mu v^2 with the reduced mass

    mu = (1/m_H + 1/m_R)^-1                                   (A.3 of the standard)

so the permissible relative speed is

    v_max = F / sqrt(mu k)          (force form)
    v_max = p A / sqrt(mu k)        (pressure form, contact area A)

with the TRANSIENT limits F_T, p_T of the region. m_R is the robot's effective mass at
the contact; the standard's simplified estimate is m_R = M / 2 + m_L (M the total mass of
the robot's moving parts, m_L the effective payload); this package computes the
configuration-dependent m_u = 1 / (u^T J_p M^-1 J_p^T u) instead (see :mod:`.points`).
Units: kg, N/m, N, Pa, m^2, m/s.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import InputError


def reduced_mass(m_H, m_R):
    """mu = (1/m_H + 1/m_R)^-1 (kg); m_R = +inf gives m_H. Broadcasts."""
    m_H = np.asarray(m_H, dtype=float)
    m_R = np.asarray(m_R, dtype=float)
    with np.errstate(divide="ignore"):
        return 1.0 / (1.0 / m_H + 1.0 / m_R)


def permissible_speed(region, m_R, contact_area=None, area=None):
    """v_max (m/s) of a transient contact of the robot (effective mass m_R, kg, any shape)
    with ``region`` (a BodyRegion): F_T / sqrt(mu k) (force form, contact_area None), or
    min(F_T, p_T A) / sqrt(mu k) when a contact area A (m^2) is given (the pressure form of
    ``area``, default the region's most restrictive; the force limit still applies).
    0 where the region admits no transient contact."""
    m_R = np.asarray(m_R, dtype=float)
    if np.isnan(m_R).any() or (m_R <= 0).any():
        raise InputError(f"m_R must be > 0 (kg), got {m_R!r}")
    F = permissible_force(region, contact_area, area)
    mu = reduced_mass(region.effective_mass, m_R)
    return F / np.sqrt(mu * region.spring_constant)


def permissible_force(region, contact_area=None, area=None):
    """F (N) of v_max = F / sqrt(mu k) (:func:`permissible_speed`): the region's transient
    force F_T, or min(F_T, p_T A) with a contact area A (m^2; ``area`` as there). 0 where
    the region admits no transient contact."""
    F = region.transient_force()
    if contact_area is not None:
        A = float(contact_area)
        if not np.isfinite(A) or A <= 0:
            raise InputError(f"contact_area must be finite and > 0 (m^2), got {contact_area!r}")
        F = min(F, region.pressure(area, transient=True) * A)
    return F


def simplified_robot_mass(model, payload_mass=None):
    """The standard's conservative shortcut m_R = M / 2 + m_L (kg): M the total mass of the
    robot's moving bodies without payloads, m_L the payloads on moving links (the model's
    ``with_payload`` ones; ``payload_mass`` overrides it, kg >= 0)."""
    moving = {f: v for f, v in model.payloads.items() if model.frame_body(f)[0] >= 0}
    M = float(model.body_inertias()[0].sum()) - sum(v[0] for v in moving.values())
    if payload_mass is None:
        m_L = sum(float(v[0]) for v in moving.values())
    else:
        m_L = float(payload_mass)
        if not np.isfinite(m_L) or m_L < 0:
            raise InputError(f"payload_mass must be finite and >= 0 (kg), got {payload_mass!r}")
    return 0.5 * M + m_L
