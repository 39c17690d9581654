"""What the fuzz tests assert about the outcomes a derandomized hypothesis search saw.

Derandomized searches are repeatable for one tree, but the draws that follow an example
depend on what the code under test did with the ones before (hypothesis mutates earlier
choice sequences), so another change anywhere on the path shifts the exact counts a
little (seen: 129 -> 119 URDFs equal to Pinocchio's after unrelated merges). What must
hold on every tree: the number of cases; no outcome outside the known ones (each of which
the test has checked case by case); and every main outcome (measured 20 or more times)
still seen at least half as often as measured, so that a core refusing everything, or a
search that stopped drawing one kind of case, fails.
"""
from collections import Counter


def assert_outcomes(seen: Counter, measured: dict) -> None:
    assert seen["cases"] == measured["cases"], (seen, measured)
    unknown = set(seen) - set(measured)
    assert not unknown, f"outcomes never measured: {sorted(unknown)} in {dict(seen)}"
    for outcome, count in measured.items():
        if outcome != "cases" and count >= 20:
            assert seen[outcome] >= count / 2, (outcome, seen[outcome], count, dict(seen))
