"""Bad arguments at every public identification entry point get an InputError naming the
argument (core/identification/arguments.py): the raw errors issue 21 found, then a hypothesis fuzz.

Each raw-error test failed on main before the checks (IndexError from ``samples.tau[keep]``,
numpy's "array must not contain infs or NaNs", a broadcasting ValueError, mass = nan).
The fuzz draws one entry point, one argument and one corruption (a NaN or an inf at a
drawn entry, a row or a column short, a wrong number of dimensions) or none, and predicts
the outcome from the draw alone: success, or an InputError whose message starts with the
argument's name (and for a value, names the entry and the value).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from manip_dynamics import InputError, RobotModel, robots
from manip_dynamics.core.identification import pipeline as I
from manip_dynamics.core.identification import payload as P
from manip_dynamics.core.identification import regressor as R

from ..dynamics.test_fuzz_urdf import FUZZ

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    PANDA_XML = open(robots.path("panda"), encoding="utf-8").read()
    PANDA = RobotModel.from_urdf_string(PANDA_XML)
N = 12
FRAME, PAYLOAD = "panda_link8", (1.2, (0.01, 0.02, 0.05), np.diag([2e-3, 3e-3, 1e-3]))
LOADED = PANDA.with_payload(FRAME, *PAYLOAD)
BASE = R.base_parameters(PANDA)


def states(count=N, seed=0):
    q, qd, qdd = R.random_states(PANDA, count, np.random.default_rng(seed))
    return q, qd, qdd, LOADED.inverse_dynamics(q, qd, qdd)


def samples(tau=None):
    q, qd, qdd, tau0 = states(80)
    return np.arange(80) * 1e-3, q, qd, qdd, tau0 if tau is None else tau


# ------------------------------------------------------------------ the raw errors
@pytest.mark.parametrize("cut", ["column", "row"])
def test_identify_with_tau_one_short(cut):
    t, q, qd, qdd, tau = samples()
    tau = tau[:, :-1] if cut == "column" else tau[:-1]
    with pytest.raises(InputError, match=r"^tau must have shape \(80, 7\)"):
        I.identify(PANDA, I.Samples(t, q, qd, qdd, tau), friction=False, base=BASE)


def test_identify_with_a_nan_in_tau():
    t, q, qd, qdd, tau = samples()
    tau[5, 3] = np.nan
    with pytest.raises(InputError, match=r"^tau\[5, 3\] is nan"):
        I.identify(PANDA, I.Samples(t, q, qd, qdd, tau), friction=False, base=BASE)


def test_identified_urdf_with_beta_instead_of_pi():
    result = I.identify(PANDA, I.Samples(*samples()), friction=False, base=BASE)
    with pytest.raises(InputError, match=r"^pi must have shape \(70,\), got \(43,\)"):
        I.identified_urdf(PANDA_XML, PANDA, result.beta, friction=False)


def test_estimate_payload_with_a_nan_in_tau():
    q, qd, qdd, tau = states()
    tau[2, 6] = np.nan
    with pytest.raises(InputError, match=r"^tau\[2, 6\] is nan"):
        P.estimate_payload(PANDA, FRAME, q, tau)


# ------------------------------------------------------------------ fuzz
def _identify(prior, min_speed):
    return I.identify(PANDA, I.Samples(*samples()), friction=False, base=BASE, prior=prior,
                      min_speed=min_speed)


def _filter(t, q, qd, tau):
    return I.filter_recording(t, q, qd, tau, cutoff=50.0, trim=0)


# entry: (call, argument names in check order, valid arguments, corruptions not allowed
# per argument: a row short of the first argument, or a column short of the argument that
# fixes n, is a consistent input whose mismatch the NEXT argument reports)
ENTRIES = {
    "Samples": (I.Samples, ("t", "q", "qd", "qdd", "tau"), lambda: samples(),
                {"t": {"rows"}, "q": {"rows", "cols"}}),
    "joint_torque_regressor": (lambda q, qd, qdd: R.joint_torque_regressor(PANDA, q, qd, qdd),
                               ("q", "qd", "qdd"), lambda: states()[:3], {"q": {"rows"}}),
    "frame_regressor": (lambda q, qd, qdd: R.frame_regressor(PANDA, q, qd, qdd, FRAME),
                        ("q", "qd", "qdd"), lambda: states()[:3], {"q": {"rows"}}),
    "estimate_payload": (lambda q, tau, qd, qdd: P.estimate_payload(PANDA, FRAME, q, tau, qd,
                                                                    qdd),
                         ("q", "tau", "qd", "qdd"),
                         lambda: (lambda q, qd, qdd, tau: (q, tau, qd, qdd))(*states()),
                         {"q": {"rows"}}),
    "identified_urdf": (lambda pi: I.identified_urdf(PANDA_XML, PANDA, pi, False), ("pi",),
                        lambda: (R.model_parameters(LOADED),), {}),
    "filter_recording": (_filter, ("t", "q", "qd", "tau"),
                         lambda: (lambda t, q, qd, qdd, tau: (t, q, qd, tau))(*samples()),
                         {"t": {"rows"}, "q": {"rows", "cols"}}),
    "identify": (_identify, ("prior", "min_speed"),
                 lambda: (R.model_parameters(PANDA), 0.0), {"min_speed": {"rows", "cols"}}),
}
KINDS = ("nan", "inf", "-inf", "rows", "cols", "ndim")


def corrupt(x, kind, where):
    """x with one corruption; ``where`` (floats in [0, 1)) picks the entry."""
    a = np.array(x, dtype=float)
    if a.ndim == 0:                                        # a scalar argument
        return {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "ndim": np.zeros(2)}[kind]
    if kind in ("nan", "inf", "-inf"):
        idx = tuple(int(w * s) for w, s in zip(where, a.shape))
        a[idx] = float(kind)
        return a, idx
    if kind == "rows":
        return a[:-1]
    if kind == "cols":
        return a[..., :-1] if a.ndim == 2 else a[:-1]
    return a[None] if a.ndim < 2 else a[0, 0]                # ndim


@st.composite
def cases(draw):
    entry = draw(st.sampled_from(sorted(ENTRIES)))
    _, names, _, forbidden = ENTRIES[entry]
    if draw(st.integers(0, 5)) == 0:
        return entry, None, None, None
    name = draw(st.sampled_from(names))
    kinds = [k for k in KINDS if k not in forbidden.get(name, set())
             and not (name == "pi" and k == "cols")]
    return (entry, name, draw(st.sampled_from(kinds)),
            draw(st.lists(st.floats(0, 0.999), min_size=2, max_size=2)))


@settings(FUZZ, max_examples=80)
@given(cases())
def test_bad_arguments_are_named(case):
    entry, name, kind, where = case
    call, names, valid, _ = ENTRIES[entry]
    args = list(valid())
    if name is None:                                        # valid: an answer, finite
        out = call(*args)
        if entry == "estimate_payload":
            assert abs(out.mass - PAYLOAD[0]) < 1e-6, out.mass
        return
    k = names.index(name)
    bad = corrupt(args[k], kind, where)
    idx = None
    if isinstance(bad, tuple):
        bad, idx = bad
    args[k] = bad
    with pytest.raises(InputError) as info:
        call(*args)
    message = str(info.value)
    assert message.startswith(name), (entry, name, kind, message)
    if idx is not None and np.ndim(args[k]) > 0:
        assert f"{name}[{', '.join(map(str, idx))}]" in message and kind in message, message
    elif np.ndim(args[k]) == 0 and kind in ("nan", "inf", "-inf"):
        assert kind.lstrip("-") in message, message
