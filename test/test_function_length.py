"""Style rule: no function in manip_dynamics/ longer than MAX_LINES (docs/design.md).

Counted from the ``def`` line to the last line of the body, docstring included.
"""
from __future__ import annotations

import ast
import pathlib

MAX_LINES = 80
ROOT = pathlib.Path(__file__).resolve().parents[1] / "manip_dynamics"
EXCLUDED: set = set()


def long_functions(root=ROOT, limit=MAX_LINES):
    """[(file, function, lines)] of every function longer than ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in EXCLUDED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append((rel, node.name, lines))
    return found


def test_long_functions_are_detected(tmp_path):
    """The checker itself finds a long function and passes a short one."""
    (tmp_path / "m.py").write_text("def short():\n    return 1\n\n\ndef long():\n"
                                   + "    x = 1\n" * 90 + "    return x\n")
    assert long_functions(tmp_path) == [("m.py", "long", 92)]


def test_no_function_in_manip_dynamics_is_longer_than_the_limit():
    assert long_functions() == []
