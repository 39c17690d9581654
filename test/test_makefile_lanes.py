"""`make test` runs the whole suite as concurrent lanes (Makefile, docs/building.md): every
test file of test/ must be run by exactly one of the lanes ros and core, so that splitting
the suite can never leave a test out or run it twice. A lane runs folders and files, and
leaves out files of its folders with ``--ignore=<file>`` (the ROS-free files of the ros
lane's folders, which the core lane runs)."""
from __future__ import annotations

import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parent.parent


def lanes() -> dict[str, tuple[list[str], list[str]]]:
    """{lane: ([path, ...], [ignored path, ...])} as the Makefile computes them (`make
    print-lanes`; an ignored path is an argument ``--ignore=<path>``)."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "print-lanes"], cwd=REPO,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    found = {}
    for line in out.splitlines():
        name, _, words = line.partition(":")
        paths = [w for w in words.split() if not w.startswith("-")]
        ignored = [w.removeprefix("--ignore=") for w in words.split()
                   if w.startswith("--ignore=")]
        assert len(paths) + len(ignored) == len(words.split()), f"{name}: {words}"
        found[name.strip()] = (paths, ignored)
    return found


def _runs(paths, ignored, f: pathlib.Path) -> list[str]:
    """The entries of ``paths`` that make pytest run test file ``f`` (it or a folder above
    it), none if ``f`` is one of ``ignored`` or below one."""
    def covers(path):
        return f == pathlib.Path(path) or pathlib.Path(path) in f.parents
    if any(covers(path) for path in ignored):
        return []
    return [path for path in paths if covers(path)]


def test_every_test_file_is_in_exactly_one_lane():
    found = lanes()
    assert set(found) == {"ros", "core"}, found
    # pytest's default python_files patterns (pytest.ini sets none)
    files = sorted({p.relative_to(REPO) for pattern in ("test_*.py", "*_test.py")
                    for p in (REPO / "test").rglob(pattern)
                    if "__pycache__" not in p.parts})
    assert len(files) > 50, files      # the suite itself, not an empty directory
    for f in files:
        holders = [(lane, path) for lane, (paths, ignored) in found.items()
                   for path in _runs(paths, ignored, f)]
        assert len(holders) == 1, f"{f}: run by {holders or 'no lane'}"
    # every name a lane gives exists (a renamed file left in the Makefile's lists would
    # otherwise be ignored by one lane and missing from the other)
    for lane, (paths, ignored) in found.items():
        for path in paths + ignored:
            assert (REPO / path).exists(), f"lane {lane} names {path}, which does not exist"


def test_a_file_left_out_of_the_ros_lane_is_run_by_the_core_lane():
    """The ros lane's --ignore entries are exactly the core lane's files below the ros
    lane's folders."""
    found = lanes()
    (ros, ros_ignored), (core, _) = found["ros"], found["core"]
    below_ros_folders = [c for c in core
                         if any(pathlib.Path(r) in pathlib.Path(c).parents for r in ros)]
    assert sorted(ros_ignored) == sorted(below_ros_folders)
