"""`make test` runs the whole suite as concurrent lanes (Makefile, docs/building.md): every
test file of test/ must be run by exactly one of the lanes ros and core, so that splitting
the suite can never leave a test out or run it twice."""
from __future__ import annotations

import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parent.parent


def lanes() -> dict[str, list[str]]:
    """{lane: [path, ...]} as the Makefile computes them (`make print-lanes`)."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "print-lanes"], cwd=REPO,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    found = {}
    for line in out.splitlines():
        name, _, paths = line.partition(":")
        found[name.strip()] = paths.split()
    return found


def test_every_test_file_is_in_exactly_one_lane():
    found = lanes()
    assert set(found) == {"ros", "core"}, found
    # pytest's default python_files patterns (pytest.ini sets none)
    files = sorted({p.relative_to(REPO) for pattern in ("test_*.py", "*_test.py")
                    for p in (REPO / "test").rglob(pattern)
                    if "__pycache__" not in p.parts})
    assert len(files) > 50, files      # the suite itself, not an empty directory
    for f in files:
        holders = [(lane, path) for lane, paths in found.items() for path in paths
                   if f == pathlib.Path(path) or pathlib.Path(path) in f.parents]
        assert len(holders) == 1, f"{f}: run by {holders or 'no lane'}"
