"""The kernels' numba cache is dropped when any kernel source changes (issue 22).

numba invalidates a cached function only when its own file changes; the kernels are split
over several files that are compiled into each other, so kernels/__init__.py keeps one
digest of them all next to the cache. The numba modules elsewhere that call the kernels
(kernels._CALLERS) have the kernels compiled into their cache entries too: those go with
it. Checked here on a copy of the folders: no numba compile, only the files.
"""
import re
import shutil
from pathlib import Path

from manip_dynamics.core.dynamics import kernels

SRC = kernels._drop_stale_cache.__defaults__[0]          # .../manip_dynamics/core/dynamics/kernels
PACKAGE = SRC.parents[2]                                  # .../manip_dynamics


def _copy(tmp_path):
    """The kernels folder, bodies.py and the callers' files, at their places below a copy
    of the package folder -> the copied kernels folder."""
    package = tmp_path / "manip_dynamics"
    folder = package / SRC.relative_to(PACKAGE)
    shutil.copytree(SRC, folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(SRC.parent / "bodies.py", folder.parent / "bodies.py")
    for caller in kernels._CALLERS:
        (package / caller).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PACKAGE / caller, package / caller)
    return folder


def _cache_files(folder):
    return sorted(f.name for f in (folder / "__pycache__").glob("*.nb[ic]"))


def test_cache_kept_while_sources_unchanged_and_dropped_when_one_changes(tmp_path):
    folder = _copy(tmp_path)
    kernels._drop_stale_cache(folder)                    # first import: stamp written
    stamp = (folder / "__pycache__" / "kernel_sources.sha256").read_text()
    for name in ("bundle.one_bundle-1.py311.nbi", "bundle.one_bundle-1.py311.1.nbc"):
        (folder / "__pycache__" / name).write_bytes(b"compiled")
    kernels._drop_stale_cache(folder)                    # second import, nothing changed
    assert len(_cache_files(folder)) == 2

    linalg = folder / "linalg.py"                        # a callee's file changes
    linalg.write_text(linalg.read_text() + "\n# edited\n")
    kernels._drop_stale_cache(folder)
    assert _cache_files(folder) == []
    assert (folder / "__pycache__" / "kernel_sources.sha256").read_text() != stamp


def test_joint_types_of_the_body_table_are_part_of_the_digest(tmp_path):
    folder = _copy(tmp_path)
    kernels._drop_stale_cache(folder)
    (folder / "__pycache__" / "passes.crba-1.py311.nbi").write_bytes(b"compiled")
    bodies = folder.parent / "bodies.py"
    bodies.write_text(bodies.read_text() + "\n# edited\n")
    kernels._drop_stale_cache(folder)
    assert _cache_files(folder) == []


def test_callers_cache_entries_go_with_the_kernels_and_no_other_module_s(tmp_path):
    folder = _copy(tmp_path)
    package = folder.parents[2]
    kernels._drop_stale_cache(folder)
    # numba's names: <module>.<function>-<line>.py<version>.nbi / .<n>.nbc
    contact = package / "core" / "contact" / "__pycache__"
    safety = package / "safety" / "__pycache__"
    callers = [contact / "detector._wrench-288.py311.nbi",
               contact / "detector._wrench-288.py311.1.nbc",
               contact / "observer._step_in_place-401.py311.nbi",
               safety / "kernel._point_row-116.py311.nbi"]
    others = [package / "core" / "dynamics" / "__pycache__" / "checks._finite-45.py311.nbi",
              safety / "kernels_elsewhere.f-1.py311.nbi"]          # not safety/kernel.py
    for f in callers + others:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"compiled")
    kernels._drop_stale_cache(folder)                    # nothing changed: all kept
    assert all(f.is_file() for f in callers + others)

    linalg = folder / "linalg.py"                        # cholesky's file: detector calls it
    linalg.write_text(linalg.read_text() + "\n# edited\n")
    kernels._drop_stale_cache(folder)
    assert [f.name for f in callers if f.exists()] == []
    assert all(f.is_file() for f in others)


def test_every_numba_module_that_calls_the_kernels_is_a_caller():
    """A numba module outside kernels/ that imports from it is in kernels._CALLERS (else an
    edit of a kernel leaves its cached kernels stale), and every caller exists."""
    imports_kernels = re.compile(r"^from [.\w]*kernels[.\w]* import|^from [.\w]+ import kernels",
                                 re.M)
    numba_kernel = re.compile(r"^@(numba\.)?n?jit\b", re.M)
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if SRC in path.parents:
            continue
        text = path.read_text()
        if numba_kernel.search(text) and imports_kernels.search(text):
            found.add(path.relative_to(PACKAGE).as_posix())
    assert found <= set(kernels._CALLERS), found - set(kernels._CALLERS)
    assert "core/contact/detector.py" in found and "safety/kernel.py" in found
    assert all((PACKAGE / c).is_file() for c in kernels._CALLERS)
