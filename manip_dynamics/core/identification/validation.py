"""Held-out validation of a dynamic model on recordings it was not fitted on.

For each sample k and joint j the model predicts the torque

    tau_pred = M(q) qdd + C(q, qd) qd + g(q) + viscous qd + coulomb sign(qd)

(``RobotModel.inverse_dynamics(..., friction=True)``: M includes the armature of a side
file) on the FILTERED states, and compares it with the measured torque, unfiltered:

    tau_meas = k_j * effort_j                (k_j the drive gain, N m per effort unit; 1
                                              when the efforts are torques)

as Mamedov et al. (2020) validate (shared/data/ur10e-mamedov2020/README.md). Per joint:

    RMS_j = sqrt(mean_k (tau_meas - tau_pred)^2)                       N m
    rre_j = 100 |tau_meas,j - tau_pred,j|_2 / |tau_meas,j|_2            %

rre is the same in current units (divide both by k_j). States: q and qd low-passed by a
zero-phase Butterworth (``scipy.signal.sosfiltfilt``; the authors: 5th order, half power
at 0.15 of Nyquist, i.e. 7.5 Hz at 100 Hz) over the whole window, qdd by central
differences of the filtered qd (``np.gradient``), no sample trimmed or decimated: the
errors are over every row of the window, as the authors' are. Nothing is resampled: the
filter takes the rows as equally spaced at the median step (the UR10e logger's 10-12 ms
steps, mean 10.7 ms, move its corner by 7%), qdd uses the stamps themselves
(``np.gradient(qd_f, t)``), and the measured torques are the rows' own (resampling them
onto a uniform grid would interpolate the raw currents and average part of their noise
away: 9.55 instead of 10.2 N m summed RMS for the same UR10e model).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from . import arguments


@dataclass(frozen=True)
class ValidationStates:
    """t (N,) s; q (N, n) rad, qd rad/s, qdd rad/s^2 filtered; tau (N, n) measured torque,
    N m (drive gain x effort), unfiltered."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray


@dataclass(frozen=True)
class PredictionErrors:
    """Per joint (n,): rms N m, rre % (module docstring); tau_pred (N, n) N m."""

    rms: np.ndarray
    rre: np.ndarray
    tau_pred: np.ndarray


def validation_states(t, q, qd, tau, cutoff=7.5, order=5):
    """ValidationStates of a recording: t (N,) s strictly increasing, q, tau (N, n), qd
    (N, n) or None (then d q_f / dt); cutoff Hz of the ``order``-pole Butterworth run
    forward and backward on q and qd (not on tau). InputError naming the bad argument."""
    t = arguments.array("t", t, (None,))
    if len(t) < 16 or np.any(np.diff(t) <= 0):
        raise InputError(f"t must be strictly increasing with at least 16 samples, got "
                         f"{len(t)}")
    q = arguments.array("q", q, (len(t), None))
    shape = q.shape
    tau = arguments.array("tau", tau, shape)
    qd = None if qd is None else arguments.array("qd", qd, shape)
    order = arguments.count("order", order, 1)
    dt = float(np.median(np.diff(t)))
    cutoff = arguments.scalar("cutoff", cutoff)
    if not 0 < cutoff < 0.5 / dt:
        raise InputError(f"cutoff {cutoff} Hz must be in (0, fs/2 = {0.5 / dt:.4g} Hz)")
    import scipy.signal       # here, not at import (pipeline.filter_recording says why)
    sos = scipy.signal.butter(order, cutoff * 2 * dt, output="sos")
    pad = 3 * (2 * len(sos) + 1)                   # sosfiltfilt's default padding
    if len(t) <= pad:
        raise InputError(f"recording too short: {len(t)} samples; the order-{order} "
                         f"filter needs more than {pad}")
    q_f = scipy.signal.sosfiltfilt(sos, q, axis=0)
    qd_f = np.gradient(q_f, t, axis=0) if qd is None else scipy.signal.sosfiltfilt(sos, qd,
                                                                                   axis=0)
    return ValidationStates(t, q_f, qd_f, np.gradient(qd_f, t, axis=0), tau)


def prediction_errors(model, states):
    """PredictionErrors of ``model`` (a RobotModel: its armature and friction included)
    over ``states`` (ValidationStates in model's joint order). A joint whose measured
    torque is zero throughout has rre nan (no norm to divide by)."""
    if states.q.shape[1] != model.n:
        raise InputError(f"states have {states.q.shape[1]} joints, the model {model.n}")
    tau_pred = model.inverse_dynamics(states.q, states.qd, states.qdd, friction=True)
    return PredictionErrors(*errors(tau_pred, states.tau), tau_pred)


def errors(tau_pred, tau_meas):
    """(RMS (n,), rre (n,) %) of tau_pred against tau_meas, both (N, n) (module docstring)."""
    diff = np.asarray(tau_pred, dtype=float) - np.asarray(tau_meas, dtype=float)
    norm = np.linalg.norm(tau_meas, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rre = np.where(norm > 0, 100 * np.linalg.norm(diff, axis=0) / norm, np.nan)
    return np.sqrt(np.mean(diff ** 2, axis=0)), rre
