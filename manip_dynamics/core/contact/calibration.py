"""Contact thresholds learned on the arm itself, and thresholds that follow its motion.

The observer's residual r ~ tau_ext (:mod:`.observer`) also carries every error of the
model: on a real arm friction, a drive gain or mass a few percent off, the measured
velocity's noise. A fixed threshold then either fires on free motion or misses pushes
(docs/contact.md, "On a real arm"). What is learned here, from a stretch of contact-free
motion (:func:`calibrate_contact`), is a :class:`ContactCalibration`, per joint i (N m, N
on a prismatic joint):

* ``bias_i``: the median of r_i over the stretch (a steady model error);
* ``constant_i``: ``margin`` x max |r_i - bias_i| over the stretch (the fixed threshold
  that calibration alone gives, thresholds mode "calibrated");
* the motion-following threshold (mode "motion", :class:`MotionThresholds`)::

      enter_i(t) = margin (rest_i + speed_i v(t) + accel_i a_i(t) + band_i u_i(t))

  v(t) the arm's speed max_j |qd_j| and a_i(t) = |qdd_i| (qdd by the difference of two
  measured qd), each as an envelope that jumps up with the value and decays like the
  observer's own response (exp(-K_O dt): an error the model makes at time s shows in r
  as a first-order response of time constant 1 / K_O); u_i(t) in [0, 1] says that joint
  i's friction is not known (the friction band): 1 when the sign of qd_i changed since the
  last sample (a Coulomb term jumps there; with the observer's ramp, ``slide_speed``,
  it turns continuously but the real joint may stick), and held at 1 after a stop (the
  joint slid faster than ``move_speed`` and now does not: stiction holds an unknown
  torque) until the settling rule below; otherwise decaying like v. The coefficients
  are the smallest (in mean over the stretch) non-negative ones whose threshold covers
  |r_i - bias_i| on every sample of the stretch (a linear programme per joint,
  :func:`_envelope`), with rest_i at least a tenth of
  the stretch's peak |r_i - bias_i| (a joint whose error the stretch shows only in motion
  would otherwise get rest_i = 0: no margin for the current's noise at rest).

  Two more terms are not learned but known from the model and the signals, and added to
  the learned threshold (:meth:`MotionThresholds.enter`): they cover what a single
  stretch of motion need not show (every false contact left on the UR10e's other
  identification runs was one of them, docs/contact.md)::

      enter_i(t) += coulomb_i s_i(t) + d_i(t)

  * s_i, the slow friction: a joint driven faster than ``rest_speed`` (not along its
    residual: below) since the arm last settled or levelled, and now slower than
    ``move_speed``, has a friction anywhere between
    stiction and the observer's Coulomb ramp (which gives coulomb_i |qd_i| / v there):
    s_i = 1 - min(|qd_i| / move_speed, 1), and coulomb_i the Coulomb coefficient of the
    model the observer subtracts (N m; 0 without friction); s_i = 0 again once the arm
    settled (the held torque is then in the bias). On the UR10e: the controller's slow
    starts and stops, the current changing by 10-15 N m before qd reaches 0.02 rad/s.
    Not while joint i measurably moves along its residual (|qd_i| > ``SIGN_SPEED`` x
    rest_speed, 2e-4 rad/s by default, and the last sample's r_i - bias_i of qd_i's
    sign): friction dissipates, so the friction the model lacks while the joint slides
    (the true friction beyond the ramp, of the sign of qd_i) shows in
    r = tau_ext - (tau_f - tau_f,model) against qd_i; an r_i along qd_i is a torque
    doing work on the joint (a push the arm yields to), which no friction explains. At a
    standstill (|qd_i| at most 2e-4 rad/s: the UR10e log's qd reads 0 or +-1e-4 there,
    its resolution, and stiction holds a torque of either sign) s_i counts as before,
    except after a joint's motion that was all along its residual: friction opposes a
    yield, so the friction the model lacks after it lowers |r|, it cannot raise it (on
    the UR10e the shoulder yielding to a push at 2e-3 rad/s had raised its threshold
    from 13.5 to 27 N m mid-push). (The last sample's residual: the node's path sets the
    thresholds before the sample's observer step.)
  * d_i, the current's lead: a drive's current can step one sample before its measured
    velocity does (the UR10e's at a trajectory's stop: 55-220 N m in one 10 ms sample,
    qd still at its speed); the observer then integrates the step one sample early, an
    error of (1 - exp(-K_O h)) |tau_i(t) - tau_i(t - h)| that decays like the observer's
    response: d_i is that, as an envelope decaying by exp(-K_O h) (0 when no effort is
    given to :meth:`MotionThresholds.enter`).

At rest and at the switch (:meth:`MotionThresholds.settle_bias`), three rules set the
bias (the level r is judged against):

* the standstill level: stiction holds a constant torque while the arm stands still.
  Once every joint has stood still (|qd_i| at most ``SIGN_SPEED`` x ``rest_speed``: the
  velocity's resolution) for 5 / K_O s since the start or the last motion (the observer's
  response to what came before has decayed to e^-5; at the start, r(0) = 0 is no level)
  and then for another 5 / K_O s with every r_i within rest_i, and the detector is not
  in contact, the bias takes the mean r of that window and u = s = 0 (once per
  standstill: 0.2 s after the arm stopped at K_O = 50; a push in progress is not taken
  as the level, and a later slow change only by the settling rule below). Without it a
  push shortly after a stop was judged from a level the arm no longer held (on the
  UR10e 0.5 s after the start, or 0.75 s after a push whose torque stiction still held:
  detected 4 samples early and 7 late);
* the release: a joint that slides holds no torque, so it gets the calibrated bias
  back: faster than ``move_speed``, or driven faster than ``rest_speed`` (its r_i - bias_i
  not of qd_i's sign). A joint yielding to its residual (r_i along qd_i: a push it gives
  way to) keeps the level;
* the settling rule: when every joint has stayed below
``rest_speed`` and every r_i has stayed within a band of rest_i (the error the arm shows
at rest, without the margin) for ``settle`` s, the bias takes the mean residual of that
window and u = 0. The band leaves the margin intact: right after a settling r_i - bias_i
is at most rest_i, 1 / margin of the enter threshold at rest (with a band of the whole
threshold, margin x rest_i, a residual still relaxing after a stop could be taken as
the level and leave r - bias anywhere up to the threshold itself). The torque
a joint's stiction holds (on the UR10e up to 13 N m away from gravity after a push, with qd = 0)
is then no contact, and the threshold at rest is rest_i (what the arm's current noise
and model error give while it stands still, times margin), not the friction band. A push at rest is
judged on its change from the settled level. The price: a load held perfectly still
(no joint moving above ``rest_speed``, the residual steady within rest_i) for
``settle`` s becomes the new level, and a contact ends by that rule at the latest
``settle`` s after the torque stopped changing; a residual still relaxing after a stop
(the drive's current) when the standstill level is taken moves away from it, which the
learned rest_i must cover: the calibration replays the same rules, so it covers the
relaxations its stretch shows (on the UR10e, with the rules at rest and at the switch,
the elbow's rest_i grew from 1.55 to 3.95 N m).

Refusals (:class:`InputError`, one line): the stretch is too short (less than
``min_duration`` s or 100 samples); too still to be representative (the arm moves
faster than ``move_speed`` on less than ``min_moving`` of the samples); or looks like
contact (some joint's |r_i - median| stays above ``contact_ratio`` times its spread,
1.4826 x the median absolute deviation, for ``contact_time`` s or longer: a push ramps
over 0.2-0.6 s and holds, where free motion's model error swings).

Saved as YAML next to the description (:func:`calibration_file_beside`,
``<name>.contact.yaml``; docs/side_file.md) by :func:`save_calibration`, read back by
:func:`load_calibration` with the same bits.

Only numpy, scipy (the linear programme) and PyYAML (on use).
"""
from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path

import numpy as np

from ..dynamics.side_file import beside_description
from ..errors import InputError
from ..extras import import_extra

VERSION = 1
THRESHOLD_MODES = ("fixed", "calibrated", "motion")
REST_FLOOR = 0.1      # rest_i >= this x the peak |r_i - bias_i| of the stretch
SIGN_SPEED = 0.1     # x rest_speed: a joint measurably moves above it (slow friction's test)
_PER_JOINT = ("bias", "constant", "rest", "speed", "accel", "band")


@dataclass(frozen=True)
class ContactCalibration:
    """What :func:`calibrate_contact` learned, per joint in ``joint_names`` order (tuples of
    floats; N m or N per joint, speed N m s/rad, accel N m s^2/rad).

    bias: subtracted from r; constant: the calibrated fixed enter thresholds; rest, speed,
    accel, band: the motion-following threshold's coefficients (module docstring),
    multiplied by margin; gains: the observer's K_O (1/s) the residual was computed with
    (thresholds scale with it: a calibration applies to that gain only); duration (s)
    and samples: the stretch learned on; rest_speed, move_speed (rad/s), settle (s): the
    settling rule's parameters (module docstring)."""

    joint_names: tuple
    gains: tuple
    bias: tuple
    constant: tuple
    rest: tuple
    speed: tuple
    accel: tuple
    band: tuple
    margin: float = 2.0
    rest_speed: float = 2e-3
    move_speed: float = 0.05
    settle: float = 1.0
    duration: float = 0.0
    samples: int = 0

    def __post_init__(self):
        n = len(self.joint_names)
        for name in ("gains",) + _PER_JOINT:
            a = np.asarray(getattr(self, name), dtype=float)
            if a.shape != (n,) or not np.isfinite(a).all():
                raise InputError(f"contact calibration: {name} must be {n} finite numbers, "
                                 f"got {getattr(self, name)!r}")
            if name != "bias" and (a < 0).any():
                raise InputError(f"contact calibration: {name} must be >= 0, got {a.tolist()}")
            object.__setattr__(self, name, tuple(float(x) for x in a))
        object.__setattr__(self, "joint_names", tuple(str(x) for x in self.joint_names))
        for name in ("margin", "rest_speed", "move_speed", "settle"):
            x = getattr(self, name)
            if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
                raise InputError(f"contact calibration: {name} must be a number > 0, got {x!r}")

    def for_joints(self, joint_names):
        """Check this calibration against a model's joints (InputError naming the
        difference); returns self."""
        if tuple(joint_names) != self.joint_names:
            raise InputError("contact calibration is for joints "
                             f"{', '.join(self.joint_names)}, the model has "
                             f"{', '.join(joint_names)}")
        return self

    def as_dict(self) -> dict:
        """The YAML structure (:func:`save_calibration`): floats in Python's shortest
        round-trip form."""
        out = {"version": VERSION}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


# ============================================================================ learning
def calibrate_contact(t, qd, residual, joint_names, gains, *, margin=2.0, min_duration=10.0,
                      move_speed=0.05, min_moving=0.3, contact_ratio=8.0, contact_time=0.25,
                      rest_speed=2e-3, settle=1.0) -> ContactCalibration:
    """Learn a :class:`ContactCalibration` from a contact-free stretch.

    t (N,) s increasing; qd (N, n) measured joint velocities (rad/s or m/s); residual
    (N, n) the observer's raw r (before any bias: ``MomentumObserver.raw_residual`` or
    ``run`` with a zero bias) with observer gains ``gains`` (scalar or (n,), 1/s);
    joint_names (n,). The first 5 / min(K_O) s are left out (the observer's start,
    r(0) = 0). InputError when the stretch is too short, too still or looks like contact
    (module docstring: what decides each)."""
    t, qd, r, gains = _checked_stretch(t, qd, residual, joint_names, gains)
    keep = t >= t[0] + 5.0 / gains.min()
    duration = float(t[-1] - t[0])
    if duration < min_duration or keep.sum() < 100:
        raise InputError(f"calibration stretch too short: {duration:.2f} s and {int(keep.sum())} "
                         f"samples after the observer's start; needs >= {min_duration:g} s "
                         "and >= 100 samples")
    moving = np.abs(qd[keep]).max(axis=1) > move_speed
    if moving.mean() < min_moving:
        raise InputError(f"calibration stretch too still to be representative: the arm moves "
                         f"faster than {move_speed:g} rad/s on {100 * moving.mean():.0f}% of "
                         f"the samples, needs >= {100 * min_moving:.0f}%")
    bias = np.median(r[keep], axis=0)
    _refuse_contact(t[keep], r[keep] - bias, joint_names, contact_ratio, contact_time, t[0])
    peak = np.abs(r - bias)[keep].max(axis=0)
    zero = (0.0,) * r.shape[1]
    cal = ContactCalibration(tuple(joint_names), tuple(gains), tuple(bias),
                             tuple(margin * peak), tuple(REST_FLOOR * peak), zero, zero, zero,
                             margin=float(margin), rest_speed=float(rest_speed),
                             move_speed=float(move_speed), settle=float(settle),
                             duration=duration, samples=int(t.shape[0]))
    for _ in range(2):                  # the settling rule's limit is the rest threshold
        cal = _fitted(cal, t, qd, r, keep)
    return cal


def _fitted(cal, t, qd, r, keep):
    """cal with rest, speed, accel, band fitted (:func:`_envelope`) to |r - bias| over the
    kept samples, features and bias as :meth:`MotionThresholds.replay` forms them with
    cal's own coefficients (its settling rule's limit)."""
    features, levels = MotionThresholds.replay(cal, t, qd, r)
    e = np.abs(r - levels)[keep]
    floor = REST_FLOOR * e.max(axis=0)
    coef = np.array([_envelope(features[keep][:, :, i], e[:, i], floor[i])
                     for i in range(r.shape[1])])                            # (n, 4)
    return replace(cal, **{name: tuple(coef[:, j]) for j, name in
                           enumerate(("rest", "speed", "accel", "band"))})


def _checked_stretch(t, qd, residual, joint_names, gains):
    """(t, qd, r, gains (n,)) as float arrays, or InputError naming the bad argument."""
    try:
        t = np.asarray(t, dtype=float)
        qd = np.asarray(qd, dtype=float)
        r = np.asarray(residual, dtype=float)
    except (TypeError, ValueError):
        raise InputError("calibration needs numeric t (N,), qd and residual (N, n)") from None
    n = len(joint_names)
    if t.ndim != 1 or qd.shape != (t.shape[0], n) or r.shape != qd.shape:
        raise InputError(f"calibration needs t (N,), qd and residual (N, {n}); got "
                         f"{t.shape}, {qd.shape}, {r.shape}")
    for name, a in (("t", t), ("qd", qd), ("residual", r)):
        if not np.isfinite(a).all():
            raise InputError(f"calibration: {name} has a non-finite value at sample "
                             f"{int(np.argwhere(~np.isfinite(a))[0][0])}")
    if t.shape[0] > 1 and not (np.diff(t) > 0).all():
        raise InputError(f"calibration: t is not increasing at sample "
                         f"{int(np.argmax(np.diff(t) <= 0)) + 1}")
    g = np.broadcast_to(np.asarray(gains, dtype=float), (n,))
    if not (np.isfinite(g) & (g > 0)).all():
        raise InputError(f"calibration: gains must be > 0, got {gains!r}")
    return t, qd, r, g.copy()


def _refuse_contact(t, e, joint_names, ratio, min_time, t0):
    """InputError when some joint's e_i = r_i - median stays above ratio x its spread
    (1.4826 MAD, at least 1e-3 of its peak) for min_time s or longer."""
    spread = 1.4826 * np.median(np.abs(e), axis=0)
    spread = np.maximum(spread, 1e-3 * np.abs(e).max(axis=0) + 1e-12)
    above = np.abs(e) > ratio * spread
    for i in range(e.shape[1]):
        start, longest, where = None, 0.0, 0.0
        for k in np.flatnonzero(np.diff(np.concatenate(([0], above[:, i].astype(int), [0])))):
            if start is None:
                start = k
            else:
                length = t[k - 1] - t[start]
                if length > longest:
                    longest, where = length, t[start] - t0
                start = None
        if longest >= min_time:
            raise InputError(
                f"calibration stretch looks like contact: joint {joint_names[i]!r} stays "
                f"{ratio:g}x its spread ({spread[i]:.3g}) away from its median for "
                f"{longest:.2f} s from {where:.2f} s into the stretch (a push?); record a "
                "stretch without contact")


def _envelope(A, e, floor):
    """c >= 0 (k,) minimising mean(A c) subject to A c >= e on every row and c_0 >= floor:
    the tightest (in mean) non-negative linear envelope of e (N,) on the features A (N, k),
    A[:, 0] = 1."""
    from scipy.optimize import linprog

    scale = np.maximum(np.abs(A).max(axis=0), 1e-12)
    bounds = [(floor * scale[0], None)] + [(0, None)] * (A.shape[1] - 1)
    res = linprog(A.mean(axis=0) / scale, A_ub=-A / scale, b_ub=-e, bounds=bounds,
                  method="highs")
    if res.status != 0:                   # (cannot happen: c_0 = max e is feasible)
        c = np.zeros(A.shape[1])
        c[0] = e.max()
        return c
    return np.maximum(res.x / scale, 0.0)


# ============================================================================ runtime
class MotionThresholds:
    """The motion-following enter thresholds of a :class:`ContactCalibration`, sample by
    sample, and the settling rule at rest (module docstring).

    Per sample: :meth:`enter` (t, qd) -> (n,) thresholds for that sample's residual, then
    :meth:`settle_bias` (t, raw residual) -> the bias to subtract from r (changes only
    when the arm has settled at rest)."""

    def __init__(self, calibration: ContactCalibration, mode="motion", coulomb=None):
        """coulomb: (n,) N m, the Coulomb coefficients of the friction the observer
        subtracts (None: no friction subtracted, the slow-friction term is 0)."""
        if mode not in THRESHOLD_MODES[1:]:
            raise InputError(f"thresholds mode must be one of {THRESHOLD_MODES[1:]}, got {mode!r}")
        c = calibration
        self.calibration, self.mode = c, mode
        self.gains = np.array(c.gains)
        self.coef = c.margin * np.array([c.rest, c.speed, c.accel, c.band])     # (4, n)
        self.constant = np.array(c.constant)
        self.bias = np.array(c.bias)
        n = len(c.joint_names)
        self.coulomb = np.zeros(n) if coulomb is None else np.asarray(coulomb, dtype=float)
        if self.coulomb.shape != (n,) or not np.isfinite(self.coulomb).all() \
                or (self.coulomb < 0).any():
            raise InputError(f"motion thresholds: coulomb must be {n} finite numbers >= 0, "
                             f"got {coulomb!r}")
        # the settling rule's steadiness limit: rest_i, the error at rest without the
        # margin (a settled level then leaves r - bias within 1 / margin of the threshold)
        self._steady = np.array(c.rest)
        self._calibrated_bias = np.array(c.bias)
        # the observer's response to what came before a standstill has decayed (e^-5)
        self._response = 5.0 / self.gains.min()
        self._thresholds = np.empty(len(c.joint_names))
        self.reset()

    def reset(self):
        """Start over (an observer restart): envelopes at their start values (u = 1: the
        friction held at rest is unknown until the arm settles), bias as calibrated."""
        self._state = _FeatureState(self.gains, self.calibration.move_speed,
                                    self.calibration.rest_speed)
        self._window = None                # settling: [t0, min, max, sum, count]
        self._still = None                 # the standstill level's window (the same)
        self._still_since = None           # t of the standstill's first sample
        self._held_unknown = True          # no level since the start or the last motion
        self.bias = np.array(self.calibration.bias)
        self.settled = 0                   # number of settlings
        self.levelled = 0                  # number of standstill levels
        self._last = np.zeros(len(self.bias))   # the last sample's r - bias (slow friction)

    @staticmethod
    def replay(calibration, t, qd, raw):
        """The threshold's features and the bias over a recorded stretch, as the runtime
        forms them: -> features (N, 4, n) = (1, v, a, u) per sample and joint, and the
        bias (N, n) subtracted from each sample's raw residual."""
        th = MotionThresholds(calibration)
        features, levels = np.ones((t.shape[0], 4, qd.shape[1])), np.empty_like(raw)
        for k in range(t.shape[0]):
            levels[k] = th.bias
            features[k, 1:] = th._step(t[k], qd[k])[0]
            th.settle_bias(t[k], raw[k], qd[k])
        return features, levels

    def enter(self, t, qd, tau=None):
        """The enter thresholds (n,) for the sample (t s, qd (n,), tau (n,) the effort the
        observer integrates, N m, or None): the calibrated constants in mode "calibrated",
        else margin (rest + speed v + accel a + band u) + coulomb s + d (module
        docstring; d = 0 while no tau is given; s = 0 on a joint moving faster than
        SIGN_SPEED x rest_speed along its last r - bias, from :meth:`settle_bias`)."""
        if self.mode == "calibrated":
            return self.constant
        st = self._state
        qd = np.asarray(qd, dtype=float)
        (v, a, u), along = self._step(t, qd, tau)
        c = self.coef
        np.multiply(c[1], v, out=self._thresholds)
        slow = st.s * ~(st.moving & along)              # (not: r along the motion)
        self._thresholds += c[0] + c[2] * a + c[3] * u + self.coulomb * slow + st.d
        return self._thresholds

    def _step(self, t, qd, tau=None):
        """The features (v, a, u) of the sample (t, qd (n,), tau) and along (n,) bool:
        joint i moves along its last r_i - bias_i (yields to it)."""
        along = self._last * qd > 0.0
        return self._state.step(t, qd, tau, along), along

    def settle_bias(self, t, raw, qd, in_contact=False):
        """After the sample at t (its detection done; in_contact: the detector's state):
        the rules at rest and at the switch (module docstring) on the raw residual (n,) ->
        the bias (n,) to subtract (self.bias), and raw - the bias in force kept for the
        next :meth:`enter` (the slow friction's sign test). In mode "calibrated" the
        calibrated bias, always.

        * a joint that slides holds no torque: faster than move_speed, or driven faster
          than rest_speed (not along its residual), it gets the calibrated bias back;
        * the standstill level: when every joint has stood still (|qd_i| at most
          SIGN_SPEED x rest_speed) for 5 / K_O s since the start or the last motion (the
          observer's response to what came before decayed to e^-5), and then for another
          5 / K_O s with every r_i within rest_i, not in contact: the bias takes that
          window's mean r (once per standstill);
        * the settling rule: every joint below rest_speed and every r_i within rest_i for
          ``settle`` s: the bias takes that window's mean r."""
        if self.mode == "calibrated":
            return self.bias
        c = self.calibration
        np.subtract(raw, self.bias, out=self._last)   # (the residual this sample was judged on)
        speed = np.abs(qd)
        sliding = (speed > c.move_speed) | ((speed > c.rest_speed) & ~(self._last * qd > 0.0))
        if sliding.any():
            self.bias[sliding] = self._calibrated_bias[sliding]
        top = speed.max()
        if top > c.rest_speed:
            self._window = self._still = self._still_since = None
            self._held_unknown = True
            return self.bias
        if self._standstill_level(t, raw, top, in_contact):
            return self.bias
        self._window = self._steady_window(self._window, t, raw)
        if t - self._window[0] >= c.settle:
            self._level(self._window)
            self.settled += 1
        return self.bias

    def _standstill_level(self, t, raw, speed, in_contact):
        """The standstill level's rule for the sample (settle_bias); True when it set the
        bias."""
        if not self._held_unknown or in_contact or speed > SIGN_SPEED * self.calibration.rest_speed:
            self._still = self._still_since = None
            return False
        if self._still_since is None:
            self._still_since = t
        if t - self._still_since < self._response:
            return False
        self._still = self._steady_window(self._still, t, raw)
        if t - self._still[0] < self._response:
            return False
        self._level(self._still)
        self.levelled += 1
        return True

    def _steady_window(self, w, t, raw):
        """The window [t0, min, max, sum, count] of raw residuals with this sample; a new
        one from it when some r_i leaves the band rest_i of the window's range."""
        if w is None or (np.maximum(w[2], raw) - np.minimum(w[1], raw) > self._steady).any():
            return [t, raw.copy(), raw.copy(), raw.copy(), 1]
        np.minimum(w[1], raw, out=w[1])
        np.maximum(w[2], raw, out=w[2])
        w[3] += raw
        w[4] += 1
        return w

    def _level(self, w):
        """The bias := the window's mean r: the torque held at rest is measured (u = s = 0)."""
        self.bias = w[3] / w[4]
        self._state.settled()
        self._window = self._still = self._still_since = None
        self._held_unknown = False


class _FeatureState:
    """Envelopes v (arm speed), a (n,) |qdd|, u (n,) friction band of :class:`MotionThresholds`,
    and its known terms s (n,) slow friction and d (n,) current's lead (module docstring;
    moving (n,): |qd_i| > SIGN_SPEED x rest_speed, for the slow friction's sign test).
    v, a and d jump up with their value and decay by exp(-K_O dt) per step. u_i = 1 when
    the sign of qd_i changed, and while joint i is slower than slide_speed after it slid
    faster (a stop: stiction then holds an unknown torque, until the settling rule takes
    it into the bias: :meth:`settled`); otherwise it decays like v. s_i = 1 - min(|qd_i| /
    slide_speed, 1) once joint i moved faster than rest_speed since the last settling (or
    the start), else 0."""

    def __init__(self, gains, slide_speed, rest_speed):
        self.gains, self.slide_speed, self.rest_speed = gains, slide_speed, rest_speed
        n = gains.shape[0]
        self.t, self.qd, self.tau = None, None, None
        self.v, self.a, self.u = 0.0, np.zeros(n), np.ones(n)
        self.slid = np.ones(n, bool)          # (at the start: as after a stop)
        self.moved = np.zeros(n, bool)        # (the start's held torque: the band u)
        self.s, self.d = np.zeros(n), np.zeros(n)
        self.moving = np.zeros(n, bool)       # |qd_i| above its sign's noise

    def step(self, t, qd, tau, along):
        """The features (3, n) = (v, a, u) for the sample (t, qd); s and d updated (d only
        when tau (n,) is given: the effort's step from the last sample that gave one).
        along (n,) bool: joint i moves along its residual (yields to it), which does not
        count as a move for s (friction opposes a yield: the
        friction the model lacks then lowers |r|, it cannot raise it)."""
        qd = np.asarray(qd, dtype=float)
        speed = np.abs(qd)
        self.moved |= (speed > self.rest_speed) & ~along
        self.moving = speed > SIGN_SPEED * self.rest_speed
        self.s = self.moved * (1.0 - np.minimum(speed / self.slide_speed, 1.0))
        if self.t is None or not t > self.t:
            self.t, self.qd = t, qd.copy()
            self._lead(None, tau)
            return np.array([np.full_like(qd, self.v), self.a, self.u])
        h = t - self.t
        decay = np.exp(-self.gains * h)
        self.v = max(float(speed.max()), float(decay.max()) * self.v)
        self.a = np.maximum(np.abs(qd - self.qd) / h, decay * self.a)
        sliding = speed > self.slide_speed
        stopped = self.slid & ~sliding
        self.slid |= sliding
        held = (np.sign(qd) != np.sign(self.qd)) | stopped
        self.u = np.where(held, 1.0, decay * self.u)
        self.t, self.qd = t, qd.copy()
        self._lead(decay, tau)
        return np.array([np.full_like(qd, self.v), self.a, self.u])

    def _lead(self, decay, tau):
        """d after a step with decay exp(-K_O h) (None: no step) and the effort tau (None:
        d only decays; the next effort is compared with the last one given)."""
        if decay is not None:
            self.d *= decay
        if tau is None:
            return
        tau = np.asarray(tau, dtype=float)
        if decay is not None and self.tau is not None:
            np.maximum((1.0 - decay) * np.abs(tau - self.tau), self.d, out=self.d)
        self.tau = tau.copy()

    def settled(self):
        """The arm settled at rest: the friction it holds is now in the bias (u = 0, s = 0)."""
        self.u[:] = 0.0
        self.slid[:] = False
        self.moved[:] = False
        self.s[:] = 0.0


# ============================================================================ file
def calibration_file_beside(description_path) -> Path:
    """``<dir>/<name>.contact.yaml`` for a robot description ``<dir>/<name>.urdf`` (or
    ``.urdf.xacro``, ``.xacro``): beside the dynamics side file ``<name>.dynamics.yaml``."""
    return beside_description(description_path, ".contact.yaml")


def save_calibration(path, calibration: ContactCalibration, comment=None) -> Path:
    """Write ``calibration`` as YAML (:meth:`ContactCalibration.as_dict`; ``comment`` lines
    on top). :func:`load_calibration` reads back the same bits."""
    yaml = import_extra("yaml", __name__)
    head = "".join(f"# {line}\n" for line in (comment or "").splitlines())
    head += "# manip_dynamics contact calibration (docs/side_file.md, docs/contact.md)\n"
    path = Path(path)
    path.write_text(head + yaml.safe_dump(calibration.as_dict(), sort_keys=False))
    return path


def load_calibration(path, joint_names=None) -> ContactCalibration:
    """Read a file of :func:`save_calibration` -> ContactCalibration (checked against
    joint_names when given). InputError, one line naming the file, otherwise."""
    yaml = import_extra("yaml", __name__)
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise InputError(f"cannot read contact calibration {str(path)!r}: {e.strerror}") from None
    except yaml.YAMLError:
        raise InputError(f"contact calibration {str(path)!r} is not valid YAML") from None
    return calibration_from_dict(doc, f"contact calibration {str(path)!r}", joint_names)


def calibration_from_dict(doc, source="contact calibration", joint_names=None):
    """:class:`ContactCalibration` of a parsed file (as_dict's structure)."""
    if not isinstance(doc, dict):
        raise InputError(f"{source}: expected a mapping, got {type(doc).__name__}")
    names = {f.name for f in fields(ContactCalibration)}
    unknown = [k for k in doc if k not in names and k != "version"]
    if unknown:
        raise InputError(f"{source}: unknown key {unknown[0]!r}")
    if doc.get("version", VERSION) != VERSION:
        raise InputError(f"{source}: version {doc['version']!r} is not supported")
    missing = [f.name for f in fields(ContactCalibration)
               if f.name not in doc and f.default is MISSING]
    if missing:
        raise InputError(f"{source}: missing {', '.join(missing)}")
    try:
        cal = ContactCalibration(**{k: (tuple(v) if isinstance(v, list) else v)
                                    for k, v in doc.items() if k != "version"})
    except InputError as e:
        raise InputError(f"{source}: {e}") from None
    except TypeError as e:
        raise InputError(f"{source}: {e}") from None
    return cal if joint_names is None else cal.for_joints(joint_names)


__all__ = ["ContactCalibration", "MotionThresholds", "THRESHOLD_MODES", "calibrate_contact",
           "calibration_file_beside", "calibration_from_dict", "load_calibration",
           "save_calibration"]
