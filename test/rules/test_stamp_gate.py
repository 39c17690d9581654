"""StampGate without ROS: stale, future and out-of-order stamps (integer nanoseconds)."""
from __future__ import annotations

from manip_dynamics.rules.stamp_gate import FUTURE_STAMP_LIMIT, StampGate

S = 1_000_000_000      # ns per s
NOW = 1_000 * S


def test_fresh_in_order_stamps_pass():
    gate = StampGate()
    for t in (NOW - 2 * S, NOW - S, NOW - S, NOW):       # equal stamps are in order
        assert gate.check(t, NOW, max_age=0.0) is None
        gate.accept(t)


def test_stale_only_with_a_max_age():
    gate = StampGate()
    assert gate.check(NOW - 10 * S, NOW, max_age=0.0) is None       # 0: no age check
    r = gate.check(NOW - 10 * S, NOW, max_age=0.5)
    assert r.key == "stale" and "10.000 s old" in r.reason and "max_state_age = 0.5" in r.reason
    assert gate.check(NOW - S // 4, NOW, max_age=0.5) is None


def test_future_beyond_the_limit_unless_the_clock_is_zero():
    gate = StampGate()
    ahead = NOW + int((FUTURE_STAMP_LIMIT + 1) * S)
    r = gate.check(ahead, NOW, max_age=0.0)
    assert r.key == "future" and "ahead" in r.reason
    assert gate.check(NOW + int((FUTURE_STAMP_LIMIT - 1) * S), NOW, max_age=0.0) is None
    assert gate.check(ahead, 0, max_age=0.0) is None      # simulated time before /clock
    assert StampGate(future_limit=0.5).check(NOW + S, NOW, 0.0).key == "future"


def test_out_of_order_until_reset():
    gate = StampGate()
    gate.accept(NOW)
    r = gate.check(NOW - S // 2, NOW, max_age=0.0)
    assert r.key == "out-of-order" and "0.500000 s older" in r.reason
    gate.reset()                                          # clock jumped back / new model
    assert gate.check(NOW - S // 2, NOW, max_age=0.0) is None


def test_a_checked_but_not_accepted_stamp_does_not_move_the_order():
    gate = StampGate()
    gate.accept(NOW - 5 * S)
    assert gate.check(NOW, NOW, 0.0) is None              # checked, then (say) not published
    assert gate.check(NOW - 4 * S, NOW, 0.0) is None      # still after the accepted one


def test_a_refused_message_between_two_good_ones_leaves_the_order_to_the_good_ones():
    """The node's sequence: good at t0 (checked, computed, accepted), a message at t2
    that passes the gate but is refused later (a NaN: checked, never accepted), then good
    at t1 < t2: in order, since only t0 was accepted."""
    gate = StampGate()
    t0, t1, t2 = NOW - 3 * S, NOW - 2 * S, NOW - S
    assert gate.check(t0, NOW, 0.0) is None
    gate.accept(t0)
    assert gate.check(t2, NOW, 0.0) is None               # then refused: not accepted
    assert gate.check(t1, NOW, 0.0) is None
    gate.accept(t1)
    assert gate.check(t0, NOW, 0.0).key == "out-of-order"
