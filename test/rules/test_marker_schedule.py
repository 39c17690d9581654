"""The marker schedule (rules/marker_schedule.py): updates after a state, at most one per
timer period, never more than two periods late."""
import random

from manip_dynamics.rules.marker_schedule import MarkerSchedule


def test_a_streaming_node_updates_right_after_the_first_state_of_each_period():
    s = MarkerSchedule()
    assert s.on_timer() is False                 # due, not now
    assert s.after_state() is True               # the state's outputs went out: now
    assert [s.after_state() for _ in range(5)] == [False] * 5   # once per period
    assert s.on_timer() is False
    assert s.after_state() is True


def test_without_states_the_update_runs_at_the_next_tick():
    s = MarkerSchedule()
    assert [s.on_timer() for _ in range(6)] == [False, True, False, True, False, True]
    assert s.after_state() is False              # the tick just did it


def test_random_interleavings_one_update_per_period_at_most_two_periods_late():
    rng = random.Random(11)
    for _ in range(200):
        s, ticks, updates, last_due_tick = MarkerSchedule(), 0, [], None
        for _ in range(rng.randrange(1, 60)):
            if rng.random() < 0.3:
                ticks += 1
                was_due = s.due
                if s.on_timer():
                    updates.append(ticks)
                    assert ticks - last_due_tick == 1        # made due one tick before
                elif not was_due:
                    last_due_tick = ticks
            elif s.after_state():
                updates.append(ticks)
                assert ticks - last_due_tick == 0            # in the period it became due
        # at most one update per period: update ticks strictly increase
        assert all(b > a for a, b in zip(updates, updates[1:]))
