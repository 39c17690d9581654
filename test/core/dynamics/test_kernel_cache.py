"""The kernels' numba cache is dropped when any kernel source changes (issue 22).

numba invalidates a cached function only when its own file changes; the kernels are split
over several files that are compiled into each other, so kernels/__init__.py keeps one
digest of them all next to the cache. Checked here on a copy of the folder: no numba
compile, only the files.
"""
import shutil

from manip_dynamics.core.dynamics import kernels


def _copy(tmp_path):
    src = kernels._drop_stale_cache.__defaults__[0]
    folder = tmp_path / "dynamics" / "kernels"
    shutil.copytree(src, folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(src.parent / "bodies.py", folder.parent / "bodies.py")
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
