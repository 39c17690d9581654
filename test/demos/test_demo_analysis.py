"""The closed-loop demo's analysis of a recording (manip_dynamics.demos.analysis), on
recordings written here: what it reads of the recorded messages. ROS-free (core lane)."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest

from manip_dynamics.demos.analysis import contact_series


def recording(stamps, reset, lose):
    """The recorder's lists for a phase "pushed" at ``stamps`` (s): residuals r = 1 before
    the reset (every one when reset is None), 0 at it, 0.5 after; truth and Contact rows
    at every stamp but ``lose``."""
    def r(st):
        if reset is None or st < reset:
            return 1.0
        return 0.0 if st == reset else 0.5

    residual = [("pushed", st, np.full(2, r(st))) for st in stamps]
    truth = [("pushed", st, np.zeros(2)) for st in stamps if st != lose]
    contact = [("pushed", st, False, "", float("nan")) for st in stamps if st != lose]
    return SimpleNamespace(lock=threading.Lock(), residual=residual, truth=truth,
                           contact=contact)


def test_the_series_starts_at_the_reset_even_when_its_truth_message_was_lost():
    """The reset's residual (r = 0) at 0.03 s; its truth message lost (seen once under load
    in CI: max() of an empty sequence): the series starts at the next common stamp, with t
    still counted from the reset."""
    stamps = [0.01 * k for k in range(10)]
    s = contact_series(recording(stamps, reset=stamps[3], lose=stamps[3]), "pushed")
    assert s["stamp"].tolist() == stamps[4:]
    assert s["t"] == pytest.approx(np.array(stamps[4:]) - stamps[3])
    assert (s["r"] == 0.5).all()
    full = contact_series(recording(stamps, reset=stamps[3], lose=None), "pushed")
    assert full["stamp"].tolist() == stamps[3:] and full["t"][0] == 0.0


def test_a_phase_without_its_reset_is_a_clear_error():
    stamps = [0.01 * k for k in range(5)]
    rec = recording(stamps, reset=None, lose=None)
    with pytest.raises(RuntimeError, match="phase pushed: the observer's reset .* 5 residuals"):
        contact_series(rec, "pushed")
