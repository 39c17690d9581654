"""manip_dynamics.rules.stats: counts, rates, percentiles, CPU and levels against values
computed by hand (no rclpy)."""
import math
import os
import subprocess
import sys

import pytest

from manip_dynamics.rules.stats import Level, NodeStats, Thresholds, diagnostic_status


def _feed(stats, received, computed_ms=(), skipped=None):
    stats.received(received)
    for ms in computed_ms:
        stats.computed(ms * 1e-3)
    for reason, n in (skipped or {}).items():
        stats.skipped(reason, n)


def test_rates_cpu_and_percentiles_of_one_interval():
    stats = NodeStats(now=10.0, cpu_seconds=2.0)
    # 100 messages in 2 s, 90 computed with callback times 1..90 ms, 10 skipped
    _feed(stats, 100, computed_ms=range(1, 91), skipped={"latest-wins": 7, "stale": 3})
    r = stats.report(now=12.0, cpu_seconds=2.5, model="panda")
    assert r.window == 2.0
    assert (r.received, r.computed) == (100, 90)
    assert r.input_rate == 50.0 and r.output_rate == 45.0
    assert r.skipped == {"latest-wins": 7, "stale": 3}
    # 1..90 ms: p50 at rank 0.5 * 89 = 44.5 -> 45.5 ms; p99 at rank 88.11 -> 89.11 ms
    assert r.callback_p50 == pytest.approx(45.5e-3)
    assert r.callback_p99 == pytest.approx(89.11e-3)
    assert r.callback_samples == 90
    assert r.cpu_per_message == pytest.approx(0.5 / 100)     # 5 ms per message
    assert r.cpu_load == pytest.approx(0.25)


def test_window_rolls_over_the_last_reports():
    stats = NodeStats(now=0.0, cpu_seconds=0.0, window_reports=2)
    _feed(stats, 10, computed_ms=[1] * 10)
    stats.report(1.0, 0.1)                  # window [0, 1]: 10 messages
    _feed(stats, 20, computed_ms=[1] * 20)
    r = stats.report(2.0, 0.3)              # window [0, 2]: 30 messages
    assert (r.window, r.received, r.input_rate) == (2.0, 30, 15.0)
    _feed(stats, 40, computed_ms=[1] * 40)
    r = stats.report(3.0, 0.7)              # oldest interval dropped: window [1, 3]
    assert (r.window, r.received, r.computed) == (2.0, 60, 60)
    assert r.input_rate == 30.0
    assert r.cpu_per_message == pytest.approx(0.6 / 60)
    assert (r.received_total, r.computed_total) == (70, 70)


def test_skips_in_window_and_totals():
    stats = NodeStats(now=0.0, cpu_seconds=0.0, window_reports=1)
    _feed(stats, 5, computed_ms=[1, 1], skipped={"stale": 3})
    stats.report(1.0, 0.0)
    _feed(stats, 4, computed_ms=[1, 1, 1], skipped={"latest-wins": 1})
    r = stats.report(2.0, 0.0, model="m")
    assert r.skipped == {"latest-wins": 1}          # no stale skip in this window
    assert r.skipped_total == {"stale": 3, "latest-wins": 1}
    level, _, values = diagnostic_status(r)
    values = dict(values)
    assert values["skipped: stale"] == "0 (total 3)"
    assert values["skipped: latest-wins"] == "1 (total 1)"
    assert values["skipped"] == "1"


def test_callback_ring_keeps_the_last_samples():
    stats = NodeStats(now=0.0, cpu_seconds=0.0, callback_samples=4)
    _feed(stats, 6, computed_ms=[100, 100, 1, 2, 3, 4])
    r = stats.report(1.0, 0.0, model="m")
    assert r.callback_samples == 4
    assert r.callback_p50 == pytest.approx(2.5e-3)       # of 1, 2, 3, 4 ms
    assert r.callback_p99 == pytest.approx(3.97e-3)      # rank 2.97 of 0..3


def test_values_are_formatted_strings():
    stats = NodeStats(now=0.0, cpu_seconds=1.0)
    _feed(stats, 1000, computed_ms=[0.25] * 1000)
    for _ in range(1000):
        stats.observer(0.0625e-3)                  # of each 0.25 ms callback
    level, message, values = diagnostic_status(
        stats.report(1.0, 1.2, model="panda: 7 joints, tip panda_hand_tcp"))
    assert level == Level.OK
    assert message == "keeping up: 1000.0 Hz in, 1000.0 Hz out"
    assert values == [
        ("model", "panda: 7 joints, tip panda_hand_tcp"),
        ("window [s]", "1.0"),
        ("input rate [Hz]", "1000.0"),
        ("output rate [Hz]", "1000.0"),
        ("received", "1000"),
        ("computed", "1000"),
        ("skipped", "0"),
        ("callback p50 [ms]", "0.250"),
        ("callback p99 [ms]", "0.250"),
        ("callback samples", "1000"),
        ("observer share of callback time [%]", "25.0"),
        ("CPU per message [ms]", "0.200"),
        ("CPU load [% of one core]", "20.0"),
    ]
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in values)


def test_no_samples_read_n_a():
    stats = NodeStats(now=0.0, cpu_seconds=0.0)
    r = stats.report(1.0, 0.01, model="m")
    assert math.isnan(r.callback_p50) and math.isnan(r.cpu_per_message)
    level, message, values = diagnostic_status(r)
    assert (level, message) == (Level.WARN, "no joint_states in the last 1.0 s")
    values = dict(values)
    assert values["callback p50 [ms]"] == "n/a" and values["CPU per message [ms]"] == "n/a"


@pytest.mark.parametrize("received, computed_ms, skipped, model, level, message", [
    (10, [1] * 10, {}, None, Level.ERROR, "no robot model"),
    (10, [], {"input:names": 10}, "m", Level.ERROR,
     "every state skipped: 0 of 10 computed in the last 1.0 s"),
    (10, [1] * 7, {"stale": 1, "latest-wins": 2}, "m", Level.WARN,
     "skipping states: 3 of 10 in the last 1.0 s (latest-wins: 2, stale: 1)"),
    # 10 Hz input: period 100 ms; p99 of [1]*9 + [500] is 1 + 0.91 * 499 = 455.09 ms > 100 ms
    (10, [1] * 9 + [500], {}, "m", Level.WARN,
     "callback p99 455.090 ms exceeds 1 input period(s) of 100.000 ms"),
    (10, [1] * 10, {}, "m", Level.OK, "keeping up: 10.0 Hz in, 10.0 Hz out"),
])
def test_levels(received, computed_ms, skipped, model, level, message):
    stats = NodeStats(now=0.0, cpu_seconds=0.0)
    _feed(stats, received, computed_ms, skipped)
    got_level, got_message, _ = diagnostic_status(stats.report(1.0, 0.0, model=model))
    assert (got_level, got_message) == (level, message)


def test_thresholds_relax_the_warnings():
    stats = NodeStats(now=0.0, cpu_seconds=0.0)
    _feed(stats, 10, [1] * 8 + [150, 150], {"latest-wins": 1})
    r = stats.report(1.0, 0.0, model="m")
    assert diagnostic_status(r)[0] == Level.WARN
    relaxed = Thresholds(skipped_warn_fraction=0.1, callback_warn_periods=2.0)
    assert diagnostic_status(r, relaxed)[0] == Level.OK     # 10 % skipped, p99 150 ms


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="window_reports"):
        NodeStats(0.0, 0.0, window_reports=0)


def test_importing_stats_never_imports_rclpy():
    code = ("import sys, manip_dynamics.rules.stats; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('rclpy', 'rosidl_runtime_py')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_observer_share_is_of_the_window_and_na_without_states():
    """The share is the window's observer time over its callback time; n/a without any
    computed state."""
    stats = NodeStats(now=0.0, cpu_seconds=0.0, window_reports=1)
    assert dict(diagnostic_status(stats.report(1.0, 0.0, model="m"))[2])[
        "observer share of callback time [%]"] == "n/a"
    _feed(stats, 10, computed_ms=[1.0] * 10)
    stats.observer(5e-3)
    assert stats.report(2.0, 0.0, model="m").observer_share == pytest.approx(0.5)
    _feed(stats, 10, computed_ms=[2.0] * 10)
    stats.observer(2e-3)                          # the last window alone: 2 of 20 ms
    assert stats.report(3.0, 0.0, model="m").observer_share == pytest.approx(0.1)
