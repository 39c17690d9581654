"""The dynamics node's contact awareness without ROS: the observer's bookkeeping per sample.

The core gives the pieces (:mod:`manip_dynamics.core.contact.observer`: the momentum observer
r ~ tau_ext; :mod:`manip_dynamics.core.contact.detector`: the tip wrench, detection with
hysteresis, isolation, the contact point). :class:`ContactMonitor` decides what the node
feeds them and when it starts over; ``manip_dynamics.nodes.contact_outputs`` only turns
its results into messages. The rules (also in docs/node.md, "Contact outputs"):

* effort meaning: ``observer.effort`` = ``total`` (effort is the motor torque tau_m) or
  ``minus_gravity`` (effort is tau_m - g(q), as some drivers report it); the observer's
  beta then omits g (core docstring). ``observer.effort_timing`` = ``sampled`` (the
  torque at the stamp) or ``held`` (the torque held over the period ending at the stamp,
  as arm_simulator publishes it: integrated exactly instead of by the trapezoid).
* no bad sample is integrated: a sample whose effort is missing for a joint, has the wrong
  length or a non-finite value, which has no velocities, or whose stamp is not after the
  last accepted one, raises :class:`InputError` and leaves r, the integral and the contact
  state exactly as they were (the next good sample spans the skipped one).
* gap rule: a step longer than ``observer.max_gap`` s (dropped or stale samples, a
  paused stream) is not integrated; ``observer.gap`` = ``bridge`` holds r and restarts
  the integral at the new sample, ``reset`` sets r = 0 there. Neither can make a spike
  (the integral over the gap, which would need beta inside it, is never formed).
* a clock restart: a stamp more than ``max_gap`` before the last accepted one (a bag
  looped, a simulation restarted) starts the observer over at that sample (r = 0, bias
  kept); a stamp at most ``max_gap`` old is a stale sample (skipped, see above).
* model change: :meth:`ContactMonitor.retarget` keeps the observer only when the new
  model has the same dynamics (same joints and the same M, C, g, tau_fr at a fixed
  test state) and the observer options are unchanged; otherwise it starts over
  (r = 0, bias cleared, contact forgotten).
* reset (r = 0, bias cleared, contact forgotten; the integral restarts at the next sample)
  and zero (bias = the current r, so the residual reads 0; contact forgotten).
* thresholds (``observer.thresholds``): ``fixed`` (``observer.enter_thresholds``),
  ``calibrated`` (the per-joint constants and bias of a
  :class:`~manip_dynamics.core.contact.calibration.ContactCalibration`) or ``motion``
  (its thresholds that follow the motion and its rules at rest, the standstill level,
  the release and the settling rule:
  core.contact.calibration's docstring). Without a calibration (:meth:`ContactMonitor.calibrate`,
  :meth:`ContactMonitor.set_calibration`) every mode uses the fixed thresholds. A reset
  or a clock restart starts the motion thresholds over (bias as calibrated).

Nothing here imports rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from manip_dynamics.core.contact.calibration import (THRESHOLD_MODES, ContactCalibration,
                                                     MotionThresholds, calibrate_contact)
from manip_dynamics.core.contact.detector import (ContactDetector, WrenchSolver, contact_point,
                                                  observe_contact_norm, tip_wrench)
from manip_dynamics.core.contact.observer import MomentumObserver
from manip_dynamics.core.errors import InputError


@dataclass(frozen=True)
class ObserverOptions:
    """The ``observer.*`` parameters, per joint where they are per joint (model order).

    gains K_O (1/s), enter thresholds (N*m or N) per joint; leave = hysteresis * enter;
    friction: subtract the model's friction; effort: "total" or "minus_gravity"; timing:
    "sampled" or "held" (core.observer: the torque at the stamp, or the torque held over
    the period ending there, as arm_simulator publishes it); max_gap
    (s) and gap ("bridge" / "reset"): the gap rule; wrench_threshold (m): the singular
    value below which the tip-wrench inverse is damped (core.contact.tip_wrench);
    force_scale (m/N): arrow length per newton of ``~/contact_markers``; markers_rate (Hz);
    thresholds: "fixed", "calibrated" or "motion" (module docstring); slide_speed (rad/s,
    per joint): the friction's Coulomb ramp (core.contact.observer; 0: sign(qd)).
    """

    enabled: bool = True
    gains: tuple = (50.0,)
    enter: tuple = (2.0,)
    hysteresis: float = 0.5
    friction: bool = False
    effort: str = "total"
    timing: str = "sampled"
    max_gap: float = 0.05
    gap: str = "bridge"
    wrench_threshold: float = 0.01
    contact_point: bool = False
    force_scale: float = 0.01
    markers_rate: float = 10.0
    thresholds: str = "fixed"
    slide_speed: tuple = (0.0,)

    @property
    def leave(self) -> tuple:
        return tuple(self.hysteresis * e for e in self.enter)


@dataclass(frozen=True)
class ContactResult:
    """One accepted sample: t (s); residual r - bias (n,); event of the observer ("start",
    "step", "gap_bridged", "gap_reset", "restart"); wrench the core's WrenchEstimate at the
    tip frame; contact the core's ContactState; point the core's ContactPoint or None."""

    t: float
    residual: np.ndarray
    event: str
    wrench: object
    contact: object
    point: object


EVENTS = ("", "enter", "leave")


class LiveResult:
    """:meth:`ContactMonitor.update_terms`' result, one object per monitor rewritten per
    sample (read it before the next sample): the fields of :class:`ContactResult` flat.

    t (s); residual r - bias (n,) and F (6,) the tip wrench: buffers; event (observer's,
    or "restart"); in_contact, joint (-1 if none), link ("" if none), candidates (the
    links the contact may lie on, link first: core.contact.joint_candidates; () if none),
    detection_time (s, nan when free), residual_norm; contact_event ("enter", "leave" or
    ""); point: the core's ContactPoint or None."""

    __slots__ = ("t", "residual", "F", "event", "in_contact", "joint", "link", "candidates",
                 "detection_time", "residual_norm", "contact_event", "point")


def _fingerprint(model) -> np.ndarray:
    """M, C, g and tau_fr of ``model`` at one fixed, generic state, as one vector: two models
    with the same fingerprint give the observer the same beta and p (to round-off)."""
    n = model.n
    q = 0.1 + 0.37 * np.arange(n) % 1.3
    qd = 0.3 - 0.21 * np.arange(n) % 0.9
    return np.concatenate([model.mass_matrix(q).ravel(), model.coriolis_matrix(q, qd).ravel(),
                           model.gravity_torques(q), model.friction_torques(qd)])


class ContactMonitor:
    """Observer + detector of one model, fed sample by sample (module docstring rules).

    model: RobotModel; options: :class:`ObserverOptions` (per-joint tuples of length 1 or
    n); tip_frame: the frame of the wrench estimate; calibration: a ContactCalibration of
    this model's joints and gains, or None (:meth:`set_calibration`).
    """

    def __init__(self, model, options: ObserverOptions, tip_frame: str,
                 calibration: Optional[ContactCalibration] = None):
        n = model.n
        if options.thresholds not in THRESHOLD_MODES:
            raise InputError(f"observer.thresholds must be one of {THRESHOLD_MODES}, got "
                             f"{options.thresholds!r}")
        self.model, self.options, self.tip_frame = model, options, tip_frame
        self.observer = MomentumObserver(
            model, gains=per_joint(options.gains, n, "observer.gains"),
            effort=options.effort, friction=options.friction, max_dt=options.max_gap,
            gap=options.gap, timing=options.timing,
            slide_speed=per_joint(options.slide_speed, n, "observer.slide_speed"))
        enter = per_joint(options.enter, n, "observer.enter_thresholds")
        self.detector = ContactDetector(model, enter, options.hysteresis * enter)
        self._fingerprint = _fingerprint(model)
        self._wrench = WrenchSolver(options.wrench_threshold)
        self.live = LiveResult()
        self.live.residual, self.live.F = self.observer.residual_buffer, self._wrench.F
        # the isolated link and the candidate links of joint j at [j]; "", () at [-1]
        self._links = tuple(self.detector.topology.joint_link) + ("",)
        self._candidates = self.detector.candidates + ((),)
        self.restarts = 0
        self.epoch: Optional[int] = None   # whole seconds subtracted from every stamp
        self.calibration: Optional[ContactCalibration] = None
        self.thresholds: Optional[MotionThresholds] = None    # None: fixed thresholds
        if calibration is not None:
            self.set_calibration(calibration)

    # ------------------------------------------------------------------ calibration
    def set_calibration(self, calibration: Optional[ContactCalibration]) -> None:
        """Use ``calibration`` (None: none) from the next sample on, as
        ``options.thresholds`` says (its bias replaces the observer's). InputError (nothing
        changed) when it is for other joints or another observer gain."""
        if calibration is None:
            self.calibration, self.thresholds = None, None
            self.observer.bias = np.zeros(self.model.n)
            self._fixed_thresholds()
            return
        calibration.for_joints(self.model.joint_names)
        if not np.allclose(calibration.gains, self.observer.gains, rtol=1e-12, atol=0.0):
            raise InputError(f"contact calibration was learned with observer gains "
                             f"{list(calibration.gains)}, this observer has "
                             f"{self.observer.gains.tolist()}: calibrate again")
        self.calibration = calibration
        mode = self.options.thresholds
        coulomb = (np.maximum(self.model.coulomb, self.model.coulomb_negative)
                   if self.options.friction else None)
        self.thresholds = (None if mode == "fixed" else
                           MotionThresholds(calibration, mode, coulomb=coulomb))
        self.observer.bias = np.array(calibration.bias if self.thresholds else np.zeros(
            self.model.n))
        self._fixed_thresholds()

    def calibrate(self, t, qd, raw_residual, **kwargs) -> ContactCalibration:
        """Learn a calibration from a contact-free stretch this monitor observed (t (N,) s,
        qd (N, n), raw_residual (N, n): r before the bias, e.g. ``observer.raw_residual``
        per sample), use it (:meth:`set_calibration`) and return it. kwargs: those of
        core.contact.calibrate_contact. InputError (nothing changed) when it refuses."""
        cal = calibrate_contact(t, qd, raw_residual, self.model.joint_names,
                                self.observer.gains, **kwargs)
        self.set_calibration(cal)
        return cal

    def _fixed_thresholds(self) -> None:
        """The detector's thresholds when they do not move: the options' (no calibration
        or mode fixed) or the calibration's constants."""
        n = self.model.n
        enter = per_joint(self.options.enter, n, "observer.enter_thresholds")
        if self.thresholds is not None:
            self.thresholds.reset()
            enter = self.thresholds.constant if self.options.thresholds == "calibrated" else enter
        self.detector.set_thresholds(enter, self.options.hysteresis * enter)

    def _moving_thresholds(self, t, qd, tau) -> None:
        """Before the detection of the sample (t, qd, tau): the motion thresholds for it."""
        th = self.thresholds
        if th is not None and th.mode == "motion":
            enter = th.enter(t, qd, tau)
            self.detector.set_thresholds(enter, self.options.hysteresis * enter)

    def _settle(self, t, qd) -> None:
        """After the sample at t (its detection done): the settling rules' bias for the next
        samples (no standstill level while in contact)."""
        th = self.thresholds
        if th is not None and th.mode == "motion":
            self.observer.bias[:] = th.settle_bias(t, self.observer.raw_residual, np.asarray(qd),
                                                   self.detector.in_contact)

    def seconds(self, sec: int, nanosec: int) -> float:
        """The observer's t (s) of a header stamp: (sec - epoch) + nanosec 1e-9, the epoch
        being the first stamp's whole seconds. A stamp near 1.7e9 s as one float64 would
        carry only ~2e-7 s of resolution (2e-4 of a 1 ms step); relative to the epoch it
        is exact to 1e-15 s over hours."""
        if self.epoch is None:
            self.epoch = int(sec)
        return (int(sec) - self.epoch) + 1e-9 * int(nanosec)

    def absolute(self, t: float) -> float:
        """A t of :meth:`seconds` back on the header's clock (s); nan stays nan."""
        return t + (self.epoch or 0)

    # ------------------------------------------------------------------ lifecycle
    def retarget(self, model, options: ObserverOptions, tip_frame: str) -> "ContactMonitor":
        """This monitor (now on ``model``) when neither the dynamics nor the options changed,
        else a fresh one (the module docstring's model-change rule)."""
        if model is self.model and (options is self.options or options == self.options):
            self.tip_frame = tip_frame      # (identity first: the same snapshot's options)
            return self
        same = (options == self.options and model.joint_names == self.model.joint_names
                and np.array_equal(_fingerprint(model), self._fingerprint))
        if not same:
            fresh = ContactMonitor(model, options, tip_frame)
            try:
                fresh.set_calibration(self.calibration)
            except InputError:               # (other joints or gains: calibrate again)
                pass
            return fresh
        self.model, self.tip_frame = model, tip_frame
        self.observer.model = model
        return self

    def reset(self) -> None:
        """r = 0, bias cleared, contact forgotten; the integral restarts at the next sample."""
        self.observer.reset(clear_bias=True)
        self.detector.reset()
        if self.thresholds is not None:
            self.set_calibration(self.calibration)

    def zero(self) -> None:
        """bias = the current r (the residual reads 0 now); contact forgotten."""
        self.observer.zero()
        self.detector.reset()

    # ------------------------------------------------------------------ samples
    def update(self, t: float, q, qd, tau) -> ContactResult:
        """Feed one sample: t (s, the joint state's stamp), q, qd, tau (n,) in model order,
        tau in the ``effort`` meaning. -> :class:`ContactResult`.

        InputError (nothing changed, nothing integrated) for a bad sample: qd None, tau
        non-finite or of the wrong shape, a stale stamp."""
        if qd is None:
            raise InputError("no velocities: the observer needs qd (p = M(q) qd)")
        event = self._stale_or_restart(t, tau, q)
        step = self.observer.update(t, q, qd, tau)
        r = step.residual
        self._moving_thresholds(t, qd, tau)
        contact = self.detector.update(t, r)
        self._settle(t, qd)
        wrench = tip_wrench(self.model, q, r, self.tip_frame,
                            threshold=self.options.wrench_threshold)
        point = None
        if contact.in_contact and self.options.contact_point:
            point = contact_point(self.model, q, r, contact.link,
                                  topology=self.detector.topology)
        return ContactResult(float(t), r, event or step.event, wrench, contact, point)

    def update_terms(self, t: float, q, qd, tau, terms, momentum) -> LiveResult:
        """:meth:`update` with the model terms of the node's own compute_all run: terms
        (DynamicsTerms of the tip frame, 6 Jacobian rows: J, g) and momentum
        (MomentumTerms: p = M qd, ct = C^T qd) of this q, qd. The observer step, the
        detection and the tip wrench run in buffers, in one numba call
        (core.contact.observe_contact: the arithmetic of MomentumObserver.update_terms,
        ContactDetector.update_into and WrenchSolver). -> :attr:`live` (rewritten per
        sample). The same rules and InputErrors as :meth:`update`."""
        observer = self.observer
        last = observer._t
        event = None if last is None or t > last else self._stale_or_restart(t, tau, q)
        detector = self.detector
        if self.thresholds is not None:
            self._check_tau(tau, q)          # (refused before the thresholds move on)
            self._moving_thresholds(t, qd, tau)
        t, obs_event, _, contact_event, joint, _, norm = observe_contact_norm(
            observer, detector, self._wrench, t, momentum.p, momentum.ct, terms.g, tau, qd,
            terms.J)
        if self.thresholds is not None:
            self._settle(t, qd)
        live = self.live                 # (residual and F: the same buffers every sample)
        live.t, live.event = t, event or obs_event
        in_contact = detector.in_contact
        live.in_contact, live.joint, live.link = in_contact, joint, self._links[joint]
        live.candidates = self._candidates[joint]
        live.detection_time, live.residual_norm = detector.detection_time, norm
        live.contact_event = EVENTS[contact_event]
        live.point = None
        if in_contact and self.options.contact_point:
            live.point = contact_point(self.model, q, live.residual, live.link,
                                       topology=detector.topology)
        return live

    def _stale_or_restart(self, t: float, tau, q) -> Optional[str]:
        """InputError for a stale stamp (at most max_gap old); "restart" (observer and
        detector started over, bias kept) for an older one; None for a stamp after the
        last accepted one."""
        last = self.observer.time
        if last is None or t > last:
            return None
        if last - t <= self.options.max_gap:
            raise InputError(f"stale sample: stamp {t:.9f} s is not after the last "
                             f"accepted {last:.9f} s; not integrated")
        self._check_tau(tau, q)          # a bad restart sample is skipped as well
        self.observer.reset()            # clock restart: start over here, bias kept
        self.detector.reset()
        if self.thresholds is not None:
            self.set_calibration(self.calibration)
        self.restarts += 1
        return "restart"

    def _check_tau(self, tau, q) -> None:
        a = np.asarray(tau, dtype=float)
        if a.shape != np.shape(q) or not np.isfinite(a).all():
            raise InputError(f"tau must be a finite vector of shape {np.shape(q)}")


def per_joint(values, n: int, name: str) -> np.ndarray:
    """A per-joint parameter (1 value for every joint, or n values) as an (n,) array;
    InputError naming ``name`` otherwise."""
    a = np.asarray(list(values), dtype=float)
    if a.shape not in ((1,), (n,)):
        raise InputError(f"{name}: needs 1 value or one per joint ({n}), got {a.size}")
    return np.broadcast_to(a, (n,)).copy()


def options_from_values(values) -> ObserverOptions:
    """The ObserverOptions of the node's parameter values (name -> value, already checked
    against the table by rules.dynamics_parameters)."""
    return ObserverOptions(
        enabled=bool(values["observer.enabled"]),
        gains=tuple(float(x) for x in values["observer.gains"]),
        enter=tuple(float(x) for x in values["observer.enter_thresholds"]),
        hysteresis=float(values["observer.hysteresis"]),
        friction=bool(values["observer.friction"]),
        effort=str(values["observer.effort"]),
        timing=str(values["observer.effort_timing"]),
        max_gap=float(values["observer.max_gap"]),
        gap=str(values["observer.gap"]),
        wrench_threshold=float(values["observer.wrench_threshold"]),
        contact_point=bool(values["observer.contact_point"]),
        force_scale=float(values["observer.force_scale"]),
        markers_rate=float(values["observer.markers_rate"]),
        thresholds=str(values.get("observer.thresholds", "fixed")),
        slide_speed=tuple(float(x) for x in values.get("observer.slide_speed", (0.0,))),
    )


__all__ = ["ObserverOptions", "ContactMonitor", "ContactResult", "options_from_values",
           "per_joint"]
