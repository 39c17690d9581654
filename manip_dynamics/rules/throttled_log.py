"""The throttled log: a repeated problem is logged at most once per period, with a count."""
from __future__ import annotations

import threading
import time
from typing import Callable

MAX_KEYS = 256     # distinct keys remembered before the memory is cleared


class ThrottledLog:
    """Logs a message at most once per ``period`` seconds per key, counting what it held back.

    ``logger`` has ``error``, ``warning`` and ``info`` methods taking one string (an rclpy
    logger or a ``logging.Logger``); ``clock`` gives seconds (monotonic by default).
    ``log(level, key, text)`` logs ``text`` unless the same key was logged less than
    ``period`` ago; the next message logged for that key says how many were held back.
    """

    def __init__(self, logger, period: float, clock: Callable[[], float] = time.monotonic):
        self._logger = logger
        self._period = period
        self._clock = clock
        self._last: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def __call__(self, level: str, key: str, text: str) -> bool:
        """Log (True) or hold back (False) ``text`` at ``level`` ('error', 'warning', 'info')."""
        now = self._clock()
        with self._lock:
            last, held = self._last.get(key, (None, 0))
            if last is not None and now - last < self._period:
                self._last[key] = (last, held + 1)
                return False
            if len(self._last) > MAX_KEYS:
                self._last.clear()
            self._last[key] = (now, 0)
        if held:
            text += f" ({held} more like this in the last {now - last:.0f} s)"
        # One call line per severity: rclpy's logger remembers the severity of each call
        # site and raises ValueError if one line logs at two severities.
        if level == "error":
            self._logger.error(text)
        elif level == "warning":
            self._logger.warning(text)
        else:
            self._logger.info(text)
        return True
