"""Where the shared recordings and descriptions are, if this checkout has them.

``shared/data/<name>`` holds data the repository may read but not carry (e.g. the real
UR10e of Mamedov et al. 2020, whose files have no licence of their own). It lies beside the
repository or above it: ``<clone>/../shared/data`` in CI, ``/work/shared/data`` for a
checkout under ``/work/`` (a worktree may sit deeper). :func:`shared_data` searches upward
from the repository; tests that need a folder skip, saying which, where it is absent.
"""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data(name):
    """The folder ``shared/data/<name>`` in the repository's folder or the nearest folder
    above it that has one, or None."""
    for folder in (REPO, *REPO.parents):
        candidate = folder / "shared" / "data" / name
        if candidate.is_dir():
            return candidate
    return None


def missing_reason(name):
    """The skip reason for a test that needs ``shared/data/<name>``."""
    return (f"shared/data/{name} not found beside or above {REPO} (the shared data folder "
            "is not part of the repository)")


def require_shared_data(name):
    """The folder ``shared/data/<name>``; skips the calling test with :func:`missing_reason`
    where it is absent."""
    path = shared_data(name)
    if path is None:
        pytest.skip(missing_reason(name))
    return path
