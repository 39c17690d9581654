"""ThrottledLog without ROS: a fake clock and a recording logger (a plain object with the
three methods, as rclpy's and logging's loggers have)."""
from __future__ import annotations

import pytest

from manip_dynamics.rules.throttled_log import MAX_KEYS, ThrottledLog


class Recorder:
    def __init__(self):
        self.lines = []

    def error(self, text):
        self.lines.append(("error", text))

    def warning(self, text):
        self.lines.append(("warning", text))

    def info(self, text):
        self.lines.append(("info", text))


@pytest.fixture
def clock():
    t = [100.0]
    return t


def make(clock, period=5.0):
    rec = Recorder()
    return ThrottledLog(rec, period, clock=lambda: clock[0]), rec


def test_first_message_of_a_key_is_logged_at_its_level(clock):
    log, rec = make(clock)
    assert log("warning", "a", "first") and log("error", "b", "other") and log("info", "c", "x")
    assert rec.lines == [("warning", "first"), ("error", "other"), ("info", "x")]


def test_repeats_within_the_period_are_held_back_and_counted(clock):
    log, rec = make(clock)
    log("warning", "a", "m")
    clock[0] += 1.0
    assert not log("warning", "a", "m")
    clock[0] += 3.9                      # 4.9 s after the first: still held back
    assert not log("warning", "a", "m")
    assert log("warning", "b", "other key")   # keys are independent
    clock[0] += 0.2                      # 5.1 s: logged, with the count and the span
    assert log("warning", "a", "m")
    assert rec.lines[-1] == ("warning", "m (2 more like this in the last 5 s)")
    clock[0] += 5.0
    assert log("warning", "a", "m")
    assert rec.lines[-1] == ("warning", "m")     # nothing held back since


def test_memory_is_bounded(clock):
    log, rec = make(clock)
    for i in range(MAX_KEYS + 2):
        log("info", f"k{i}", "x")
    assert len(log._last) <= MAX_KEYS + 1
    assert log("info", "k0", "x")        # forgotten, so logged again at once
