"""The stamp gate: which joint_states messages the dynamics node processes, by their stamp."""
from __future__ import annotations

from typing import NamedTuple, Optional

FUTURE_STAMP_LIMIT = 60.0  # s: stamps further ahead of the node's clock are skipped


class Rejection(NamedTuple):
    """Why a stamp is refused: ``key`` (stale, future, out-of-order) and a sentence."""

    key: str
    reason: str


class StampGate:
    """Refuses stale, future and out-of-order stamps (integer nanoseconds).

    ``check(stamp_ns, now_ns, max_age)`` -> None (pass) or a :class:`Rejection`:

    - stale: ``max_age > 0`` and the stamp is more than ``max_age`` s older than ``now``;
    - future: more than ``future_limit`` s ahead of ``now`` (skipped while ``now_ns`` is
      0: simulated time before the first /clock message);
    - out of order: older than the last stamp passed to :meth:`accept`.

    ``accept(stamp_ns)`` records a processed stamp; ``reset()`` forgets it (the clock
    jumped back, or a new robot model).
    """

    def __init__(self, future_limit: float = FUTURE_STAMP_LIMIT):
        self.future_limit = future_limit
        self._last_ns: Optional[int] = None

    def check(self, stamp_ns: int, now_ns: int, max_age: float) -> Optional[Rejection]:
        if max_age > 0.0:
            age = (now_ns - stamp_ns) * 1e-9
            if age > max_age:
                return Rejection("stale", f"stale: its stamp is {age:.3f} s old "
                                          f"(max_state_age = {max_age} s)")
        ahead = (stamp_ns - now_ns) * 1e-9
        if now_ns > 0 and ahead > self.future_limit:
            return Rejection("future", f"from the future: its stamp is {ahead:.3f} s ahead of "
                                       f"this node's clock (limit {self.future_limit:.0f} s; "
                                       "clocks not synchronised?)")
        last = self._last_ns
        if last is not None and stamp_ns < last:
            return Rejection("out-of-order", f"out of order: its stamp is "
                                             f"{(last - stamp_ns) * 1e-9:.6f} s older than the "
                                             "previous message's")
        return None

    def accept(self, stamp_ns: int) -> None:
        self._last_ns = stamp_ns

    def reset(self) -> None:
        self._last_ns = None
