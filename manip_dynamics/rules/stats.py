"""Diagnostics statistics of a node that turns input states into outputs (ROS-free).

The node tells a ``NodeStats`` what happens, from its callbacks (each call is a few
integer operations, cheap enough for a 1 kHz hot path)::

    stats = NodeStats(now=time.monotonic(), cpu_seconds=time.process_time())
    stats.received()                       # a joint_states message arrived
    stats.computed(callback_seconds)       # one state computed, its outputs published
    stats.skipped("latest-wins", n=3)      # n states not computed, and why
    stats.observer(seconds)                # of a computed state's callback: the observer's

and, at 1 Hz, asks for a report and turns it into a diagnostic status::

    report = stats.report(time.monotonic(), time.process_time(), model="panda: 7 joints")
    level, message, values = diagnostic_status(report)

``level`` is the byte of diagnostic_msgs/DiagnosticStatus (``Level.OK`` 0, ``WARN`` 1,
``ERROR`` 2), ``values`` a list of (key, value) strings for its ``values`` (KeyValue).

Windows. Counts, rates and CPU are taken over a rolling window made of the last
``window_reports`` report intervals (at 1 Hz reports and the default 5: the last 5 s):
``rate = (count now - count at the window's start) / (window's duration)``. Callback
times are the last ``callback_samples`` callbacks (default 1000: 1 s at 1 kHz); their
percentiles are numpy's linear interpolation (``np.percentile``).

CPU per message = process CPU time (user + system, every thread: what
``time.process_time()`` or utime + stime of /proc/PID/stat give) spent in the window,
divided by the input messages received in it. It includes the middleware's threads, so
it is what a small machine pays per joint_states message, skipped or not.

Observer share = the time the node reported with ``observer(seconds)`` in the window over
the callback time of the states computed in it (both summed): the part of the per-state
work that is the momentum observer and its contact outputs.
"""
from __future__ import annotations

import enum
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Mapping, Optional

import numpy as np


class Level(enum.IntEnum):
    """The levels of diagnostic_msgs/DiagnosticStatus (same byte values)."""

    OK = 0
    WARN = 1
    ERROR = 2


@dataclass(frozen=True)
class Thresholds:
    """When ``diagnostic_status`` reports WARN or ERROR.

    * ERROR: no robot model, or input states arrived in the window and none was computed.
    * WARN: more than ``skipped_warn_fraction`` of the window's input states were skipped
      (default 0: any skipped state); no input in the window; or the callback time p99
      exceeds ``callback_warn_periods`` input periods (the node cannot keep up for 1 %
      of the states).
    * OK otherwise.
    """

    skipped_warn_fraction: float = 0.0
    callback_warn_periods: float = 1.0


@dataclass(frozen=True)
class _Mark:
    """The cumulative counters at one instant (the start of a report interval)."""

    t: float
    cpu: float
    received: int
    computed: int
    skipped: Mapping[str, int]
    callback_s: float = 0.0
    observer_s: float = 0.0


@dataclass(frozen=True)
class StatsReport:
    """What happened in the window ``[now - window, now]``; times in s, rates in Hz.

    ``skipped`` counts the window's skipped states by reason (reasons with none left
    out), ``skipped_total`` since the start. Callback percentiles and ``cpu_per_message``
    are NaN without samples or input messages.
    """

    window: float
    received: int
    computed: int
    skipped: Mapping[str, int]
    input_rate: float
    output_rate: float
    callback_p50: float
    callback_p99: float
    callback_samples: int
    cpu_per_message: float
    cpu_load: float                     # process CPU s per wall s (1.0 = one core busy)
    received_total: int
    computed_total: int
    skipped_total: Mapping[str, int] = field(default_factory=dict)
    model: Optional[str] = None
    observer_share: float = math.nan    # observer time / callback time in the window


class NodeStats:
    """Counters and callback times of a node; see the module docstring."""

    def __init__(self, now: float, cpu_seconds: float, window_reports: int = 5,
                 callback_samples: int = 1000):
        if window_reports < 1 or callback_samples < 1:
            raise ValueError("window_reports and callback_samples must be at least 1, got "
                             f"{window_reports} and {callback_samples}")
        self._received = 0
        self._computed = 0
        self._skipped: dict[str, int] = {}
        self._callback = [0.0] * callback_samples      # ring buffer of callback times [s]
        self._n_callback = 0                            # callbacks recorded so far
        self._callback_s = 0.0                          # summed callback and observer times
        self._observer_s = 0.0
        self._marks: deque[_Mark] = deque(maxlen=window_reports)
        self._marks.append(self._mark(now, cpu_seconds))

    def received(self, n: int = 1) -> None:
        """``n`` input messages arrived."""
        self._received += n

    def computed(self, callback_seconds: float) -> None:
        """One state was computed and published; its callback took ``callback_seconds``."""
        self._computed += 1
        self._callback[self._n_callback % len(self._callback)] = callback_seconds
        self._n_callback += 1
        self._callback_s += callback_seconds

    def observer(self, seconds: float) -> None:
        """Of the callback of a computed state, ``seconds`` went to the observer."""
        self._observer_s += seconds

    def skipped(self, reason: str, n: int = 1) -> None:
        """``n`` states were not computed because of ``reason`` (a short key)."""
        self._skipped[reason] = self._skipped.get(reason, 0) + n

    def _mark(self, now: float, cpu_seconds: float) -> _Mark:
        return _Mark(now, cpu_seconds, self._received, self._computed, dict(self._skipped),
                     self._callback_s, self._observer_s)

    def report(self, now: float, cpu_seconds: float,
               model: Optional[str] = None) -> StatsReport:
        """The statistics of the window ending ``now`` (monotonic s); ``cpu_seconds`` is the
        process CPU time now; ``model`` describes the model in use (None: no model).
        Starts a new report interval."""
        start = self._marks[0]
        window = now - start.t
        received = self._received - start.received
        computed = self._computed - start.computed
        skipped = {reason: n - start.skipped.get(reason, 0)
                   for reason, n in self._skipped.items()
                   if n - start.skipped.get(reason, 0) > 0}
        n_samples = min(self._n_callback, len(self._callback))
        if n_samples:
            p50, p99 = np.percentile(self._callback[:n_samples], [50.0, 99.0])
        else:
            p50 = p99 = math.nan
        cpu = cpu_seconds - start.cpu
        callback_s = self._callback_s - start.callback_s
        report = StatsReport(
            window=window, received=received, computed=computed, skipped=skipped,
            input_rate=received / window if window > 0 else math.nan,
            output_rate=computed / window if window > 0 else math.nan,
            callback_p50=float(p50), callback_p99=float(p99), callback_samples=n_samples,
            cpu_per_message=cpu / received if received else math.nan,
            cpu_load=cpu / window if window > 0 else math.nan,
            received_total=self._received, computed_total=self._computed,
            skipped_total=dict(self._skipped), model=model,
            observer_share=((self._observer_s - start.observer_s) / callback_s
                            if callback_s > 0 else math.nan))
        self._marks.append(self._mark(now, cpu_seconds))
        return report


def _ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1e3:.3f}"


def _hz(rate: float) -> str:
    return "n/a" if math.isnan(rate) else f"{rate:.1f}"


def _level_and_message(r: StatsReport, thresholds: Thresholds) -> tuple[Level, str]:
    """The worst condition of the rules in ``Thresholds`` and a one-line summary."""
    if r.model is None:
        return Level.ERROR, "no robot model"
    n_skipped = sum(r.skipped.values())
    if r.received > 0 and r.computed == 0:
        return Level.ERROR, (f"every state skipped: 0 of {r.received} computed in the last "
                             f"{r.window:.1f} s")
    if r.received and n_skipped / r.received > thresholds.skipped_warn_fraction:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(r.skipped.items()))
        return Level.WARN, (f"skipping states: {n_skipped} of {r.received} in the last "
                            f"{r.window:.1f} s ({reasons})")
    if r.received == 0:
        return Level.WARN, f"no joint_states in the last {r.window:.1f} s"
    period = 1.0 / r.input_rate
    if r.callback_p99 > thresholds.callback_warn_periods * period:
        return Level.WARN, (f"callback p99 {_ms(r.callback_p99)} ms exceeds "
                            f"{thresholds.callback_warn_periods:g} input period(s) of "
                            f"{_ms(period)} ms")
    return Level.OK, f"keeping up: {_hz(r.input_rate)} Hz in, {_hz(r.output_rate)} Hz out"


def diagnostic_status(report: StatsReport, thresholds: Thresholds = Thresholds()
                      ) -> tuple[Level, str, list[tuple[str, str]]]:
    """(level, message, [(key, value), ...]) for a diagnostic_msgs/DiagnosticStatus.

    Keys: ``model``, ``window [s]``, ``input rate [Hz]``, ``output rate [Hz]``,
    ``received``, ``computed``, ``skipped`` (window counts), one ``skipped: <reason>``
    per reason ever seen (value ``"<in window> (total <since start>)"``),
    ``callback p50 [ms]``, ``callback p99 [ms]``, ``callback samples``, ``observer share
    of callback time [%]``,
    ``CPU per message [ms]``, ``CPU load [% of one core]``. Missing values read ``n/a``.
    """
    level, message = _level_and_message(report, thresholds)
    values = [
        ("model", report.model if report.model is not None else "none"),
        ("window [s]", f"{report.window:.1f}"),
        ("input rate [Hz]", _hz(report.input_rate)),
        ("output rate [Hz]", _hz(report.output_rate)),
        ("received", str(report.received)),
        ("computed", str(report.computed)),
        ("skipped", str(sum(report.skipped.values()))),
    ]
    values += [(f"skipped: {reason}", f"{report.skipped.get(reason, 0)} (total {total})")
               for reason, total in sorted(report.skipped_total.items())]
    values += [
        ("callback p50 [ms]", _ms(report.callback_p50)),
        ("callback p99 [ms]", _ms(report.callback_p99)),
        ("callback samples", str(report.callback_samples)),
        ("observer share of callback time [%]",
         "n/a" if math.isnan(report.observer_share) else f"{report.observer_share * 100:.1f}"),
        ("CPU per message [ms]", _ms(report.cpu_per_message)),
        ("CPU load [% of one core]",
         "n/a" if math.isnan(report.cpu_load) else f"{report.cpu_load * 100:.1f}"),
    ]
    return level, message, values
