"""Where the shared data sets are: ``shared/data/<name>`` in the repository's parent or one
of its ancestors (the engineers' checkouts sit below a folder holding ``shared/``; in CI the
clone has a copy of ``shared/`` beside it). The data are not in the repository (no
licence to copy them): a test that needs them skips, saying where it looked."""
from __future__ import annotations

from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]


def shared_data(name):
    """Path of ``shared/data/<name>`` in the repository's parent or an ancestor, or None."""
    for folder in REPOSITORY.parents:
        candidate = folder / "shared" / "data" / name
        if candidate.is_dir():
            return candidate
    return None


def require_shared_data(name):
    """The data set's path; skips the test (with the folders searched) when absent."""
    path = shared_data(name)
    if path is None:
        pytest.skip(f"shared/data/{name} not found in {REPOSITORY.parent} or its ancestors "
                    "(the real-arm data are not in the repository)")
    return path
