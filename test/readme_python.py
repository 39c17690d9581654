"""The python code blocks of README.md's "Python, without ROS" section, for the tests that
run them (test/test_packaging.py: here, and in a fresh venv holding only the wheel and
the core's dependencies).

A block whose first line is ``# pip install "manip_dynamics[<extra>]"...`` needs that
extra; the others need only the core.
"""
from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## Python, without ROS"
_EXTRA = re.compile(r'#\s*pip install "manip_dynamics\[(\w+)\]"')


def section(text=None):
    """The section's text, up to the next level-2 heading."""
    text = README.read_text(encoding="utf-8") if text is None else text
    head, found, rest = text.partition("\n" + SECTION + "\n")
    if not found:
        raise AssertionError(f"README.md has no {SECTION!r} section")
    return rest.split("\n## ", 1)[0]


def blocks(text=None):
    """[(code, extra or None)] of the section's ```python blocks, in order."""
    out = []
    for code in re.findall(r"^```python\n(.*?)^```", section(text), re.S | re.M):
        match = _EXTRA.match(code)
        out.append((code, match.group(1) if match else None))
    return out
