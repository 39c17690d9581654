"""pip packaging: the wheel, its metadata, and README.md's "Python, without ROS" section.

The wheel is built as ``python -m build`` builds it: a source distribution first
(setuptools' PEP 517 backend, from a copy of the working tree without build products),
then ``pip wheel`` of that sdist (with build isolation, so pyproject.toml's build
requirements are what it gets). Then

* its metadata is what a package index accepts (``packaging``'s validation), its version
  is package.xml's, it requires only numpy, scipy and numba (ranges holding the pins of
  requirements.txt / constraints.txt), and each optional import of
  manip_dynamics/core/extras.py is a distribution of the extra it names;
* the README section's python blocks run here (the suite's venv, every extra installed),
  and in a fresh, isolated venv holding only the wheel and the core's dependencies
  (installed from the package index with the pins of constraints.txt, by uv as in
  `make setup`, else by pip): there the
  blocks that need an extra raise MissingExtraError with the very ``pip install`` line the
  block opens with, and importing a ROS node, or running the demo, says ROS 2 is missing.

numba compiles the kernels on first use (minutes on a 2-core machine). The fresh venv gets
the kernels the working tree's run of the same blocks compiled (numba's own on-disk cache,
the __pycache__ folders under manip_dynamics/core, copied next to the installed modules): numba
uses an entry only if the source file's SHA-256, the function's bytecode, the numba version and the
CPU all match, else it compiles, so the copy cannot change a result, only the time.
"""
from __future__ import annotations

import email
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from packaging.metadata import Metadata
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import readme_python
from manip_dynamics.core.extras import EXTRAS
from test_colcon_build import _ignore

ROOT = Path(__file__).resolve().parent.parent
CORE = {"numpy", "scipy", "numba"}
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def _run(cmd, timeout=300, **kw):
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=timeout, **kw)
    assert r.returncode == 0, f"{cmd}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def _install(python, wheel):
    """The wheel and its dependencies at the pins of constraints.txt into the venv of
    ``python``, from the package index, with the installer `make setup` uses (uv: it
    reuses the wheels that set-up downloaded, where pip, whose cache set-up left empty,
    fetches numpy, scipy, numba and llvmlite again); with pip where uv fails. Both
    resolve the wheel's own metadata, which is what is tested. No .pyc of all scipy up
    front (pip's 60% of the install's CPU time): what is imported is compiled on import."""
    pins = ["-c", str(ROOT / "constraints.txt"), str(wheel)]
    uv = subprocess.run([sys.executable, "-m", "uv", "pip", "install", "--quiet", "--python",
                         str(python), *pins], stdin=subprocess.DEVNULL, capture_output=True,
                        text=True, timeout=500)
    if uv.returncode != 0:
        print(f"uv did not install the wheel ({uv.stderr.strip()[-300:]}): pip installs it")
        _run(PIP + ["--python", str(python), "install", "-q", "--progress-bar", "off",
                    "--no-compile", *pins], timeout=500)


def _package_xml(tag):
    return ET.parse(ROOT / "package.xml").getroot().findtext(tag).strip()


def _pins():
    """{canonical name: Version} of requirements.txt, completed by constraints.txt."""
    pins = {}
    for name in ("constraints.txt", "requirements.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" in line:
                dist, version = line.split("==")
                pins[canonicalize_name(dist)] = Version(version)
    return pins


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """Path of the wheel built from an sdist of the working tree (``python -m build``'s way)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src, dist = tmp / "src", tmp / "dist"
    shutil.copytree(ROOT, src, ignore=_ignore)
    t0 = time.monotonic()
    _run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
          "print(build_meta.build_sdist(sys.argv[1]))", str(dist)], cwd=src)
    (sdist,) = dist.glob("*.tar.gz")
    # (--no-cache-dir: pip would keep each temporary sdist's wheel in its wheel cache)
    _run(PIP + ["wheel", "--no-deps", "--no-cache-dir", "-q", "-w", str(dist), str(sdist)],
         cwd=tmp)
    (whl,) = dist.glob("*.whl")
    print(f"sdist + wheel built in {time.monotonic() - t0:.1f} s: {whl.name}")
    return whl


@pytest.fixture(scope="module")
def readme_here(tmp_path_factory):
    """Runs the section's blocks in this process (and so compiles into the working tree's
    numba cache what they need); -> (blocks, their namespace)."""
    blocks = readme_python.blocks()
    namespace, cwd = {}, os.getcwd()
    os.chdir(tmp_path_factory.mktemp("readme"))
    try:
        for i, (code, _) in enumerate(blocks):
            exec(compile(code, f"README.md 'Python, without ROS' block {i}", "exec"), namespace)
    finally:
        os.chdir(cwd)
    return blocks, namespace


# ----------------------------------------------------------------------------- here
@pytest.mark.slow
def test_readme_python_section_runs_here(readme_here):
    """Every block runs with its own asserts (inverse dynamics = M qdd + C qd + g, the
    observer's residual = J^T F, the payload's mass and CoM, the MCAP round trip)."""
    blocks, ns = readme_here
    assert len(blocks) >= 4
    assert [extra for _, extra in blocks if extra] == ["identification"]
    assert ns["g"].shape == (7,) and ns["M"].shape == (7, 7) and ns["Lambda"].shape == (6, 6)
    assert ns["TAU"].shape == ns["Q"].shape == (len(ns["t"]), 7)


# ----------------------------------------------------------------------------- metadata
def _requirements(meta):
    """{extra or None: {canonical name: Requirement}} of the wheel's Requires-Dist."""
    out = {}
    for req in meta.requires_dist:
        extra = None
        if req.marker is not None:
            extra = str(req.marker).split("==")[1].strip().strip('"')
        out.setdefault(extra, {})[canonicalize_name(req.name)] = req
    return out


@pytest.mark.slow
def test_wheel_metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (meta_file,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = z.read(meta_file).decode()
    meta = Metadata.from_email(text, validate=True)      # what an index checks
    assert meta.name == "manip_dynamics"
    assert str(meta.version) == _package_xml("version") == wheel.name.split("-")[1]
    assert meta.license == _package_xml("license") == "Apache-2.0"
    assert meta.summary and meta.classifiers and meta.requires_python
    assert meta.requires_python.contains(f"{sys.version_info.major}.{sys.version_info.minor}")
    assert meta.description_content_type == "text/markdown"
    body = email.message_from_string(text).get_payload()
    assert body.strip() == (ROOT / "README.md").read_text(encoding="utf-8").strip()

    reqs, pins = _requirements(meta), _pins()
    assert set(reqs[None]) == CORE, reqs[None]
    for extra, by_name in reqs.items():
        for name, req in by_name.items():
            assert req.specifier.contains(pins[name]), (extra, str(req), pins[name])
    assert set(meta.provides_extra) == {"sim", "identification", "plots", "xacro",
                                        "equations", "safety", "all", "test"}
    assert "pytest" in reqs["test"]                      # colcon test looks for it
    optional = set().union(*(reqs[e] for e in ("sim", "identification", "plots", "xacro",
                                               "equations", "safety")))
    assert set(reqs["all"]) == optional
    # each optional import is provided by a distribution of the extra its message names
    provided_by = importlib.metadata.packages_distributions()
    for module, extra in EXTRAS.items():
        dists = {canonicalize_name(d) for d in provided_by[module]}
        assert dists & set(reqs[extra]), (module, extra, dists)

    assert "manip_dynamics/robots/panda.urdf" in names
    assert "manip_dynamics/safety/iso_ts_15066.yaml" in names      # the packaged body model
    assert not [n for n in names if n.startswith(("test/", "benchmarks/"))]


# ----------------------------------------------------------------------------- fresh venv
# Runs in the fresh venv: the section's blocks (argv[1], JSON), then the ROS parts.
VENV_SCRIPT = r'''
import contextlib, io, json, sys
from manip_dynamics import MissingDependencyError, MissingExtraError
import manip_dynamics
out = {"file": manip_dynamics.__file__, "blocks": []}
ns = {}
for code, extra in json.load(open(sys.argv[1])):
    try:
        exec(compile(code, "README block", "exec"), ns)
        out["blocks"].append([extra, None])
    except MissingExtraError as e:
        out["blocks"].append([extra, str(e)])
try:
    import manip_dynamics.nodes.dynamics_node
except MissingDependencyError as e:
    out["nodes"] = str(e)
err = io.StringIO()
try:
    with contextlib.redirect_stderr(err):
        from manip_dynamics.demo import main
        main([])
except SystemExit as e:
    out["demo"] = [e.code, err.getvalue()]
import importlib.metadata as m
out["dists"] = sorted(d.metadata["Name"].lower().replace("_", "-") for d in m.distributions())
out["loaded"] = sorted({k.split(".")[0] for k in sys.modules})
print(json.dumps(out))
'''


def _seed_numba_cache(site_packages):
    """Copy the working tree's numba cache next to the installed core, folder by folder
    (see the module docstring); -> number of files copied."""
    root = ROOT / "manip_dynamics"
    files = [f for pattern in ("*.nbi", "*.nbc", "kernel_sources.sha256")
             for f in root.glob("core/**/__pycache__/" + pattern)]
    for f in files:
        target = site_packages / "manip_dynamics" / f.parent.relative_to(root)
        target.mkdir(exist_ok=True)
        shutil.copy2(f, target / f.name)
    return len(files)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_wheel_in_fresh_venv(wheel, readme_here, tmp_path):
    blocks, _ = readme_here
    t0 = time.monotonic()
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    _install(python, wheel)
    t_install = time.monotonic() - t0
    site = Path(_run([str(python), "-I", "-c", "import sysconfig; "
                      "print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    seeded = _seed_numba_cache(site)
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r = _run([str(python), "-I", "-c", VENV_SCRIPT, str(tmp_path / "blocks.json")],
             cwd=tmp_path, env=env, timeout=500)
    out = json.loads(r.stdout.splitlines()[-1])
    print(f"fresh venv: install {t_install:.1f} s, {seeded} numba cache files, "
          f"in all {time.monotonic() - t0:.1f} s")

    assert Path(out["file"]).is_relative_to(site), out["file"]   # the wheel, not the tree
    assert set(out["dists"]) == {"manip-dynamics", "numpy", "scipy", "numba", "llvmlite"}
    assert not {"rclpy", "mujoco", "matplotlib", "mcap"} & set(out["loaded"])
    assert len(out["blocks"]) == len(blocks)
    for (code, extra), (_, error) in zip(blocks, out["blocks"]):
        if extra is None:
            assert error is None, code
        else:      # the message ends in the block's own first-line install command
            hint = f'pip install "manip_dynamics[{extra}]"'
            assert code.startswith(f"# {hint}") and error.endswith(": " + hint), error
    assert out["nodes"].startswith("manip_dynamics.nodes needs ROS 2 (rclpy and "
                                   "manip_dynamics_interfaces not found)"), out["nodes"]
    code, stderr = out["demo"]
    assert code == 2 and stderr.startswith("error: python -m manip_dynamics.demo needs ROS 2")
    assert stderr.count("\n") == 1, stderr
