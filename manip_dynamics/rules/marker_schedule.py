"""When the dynamics node updates ~/inertia_markers: in the gap after a state, not between two.

A MarkerArray costs several joint_states callbacks (in-process about 0.16 ms to fill and
0.10 ms to publish for the Panda). Built at the marker timer's own moment, it delayed
whatever state arrived meanwhile, and with 10 updates per second at 1 kHz those delayed
states were exactly the p99 of the node's latency (docs/realtime.md). The timer now only
makes an update *due*; while states stream in, the update runs right after the next state's
outputs are published, the moment the next state is furthest away (the node splits it: the
array is built in that gap and published in the gap after the following state, so neither
half delays a state as long as the whole did). Without a state for a whole timer period
the update runs at the next tick (so the last state of a stream still gets its markers,
one to two periods late).
"""
from __future__ import annotations


class MarkerSchedule:
    """``on_timer()`` at every marker-timer tick and ``after_state()`` after every computed
    state (or batch of states) each say whether to update the markers now. At most one
    update per timer period; an update is never more than two periods late."""

    def __init__(self) -> None:
        self.due = False

    def on_timer(self) -> bool:
        """True: update now (the update made due at the last tick found no state since)."""
        if self.due:
            self.due = False
            return True
        self.due = True
        return False

    def after_state(self) -> bool:
        """True: update now (due since the last tick, and a state's outputs just went out)."""
        if self.due:
            self.due = False
            return True
        return False
