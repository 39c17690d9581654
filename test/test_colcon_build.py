"""A ROS 2 user's build: the repository cloned into a colcon workspace's ``src/``.

colcon stops descending at the first package it finds, so the repository root
(``manip_dynamics``) hides ``manip_dynamics_interfaces/`` below it. The documented
invocation (docs/building.md) names the nested package as a second base path:

    colcon build --base-paths src src/manip_dynamics/manip_dynamics_interfaces

This test copies the working tree into a temporary workspace, runs exactly that with the
venv's colcon, sources ``install/setup.bash`` and checks that the generated interface
types import from the workspace and that the ``dynamics_node`` console script is
installed where ``ros2 run`` looks for it; then ``colcon test`` runs one test file of the
package with pytest (its DDS traffic stays on loopback, like every test here).

The workspace is ``.manip_dynamics_build/colcon-test`` in the venv, emptied first: the
interfaces' build directory then sits at the depth of the set-up's own cmake build
(``.manip_dynamics_build/ws/build/manip_dynamics_interfaces``, Makefile), and the build
goes through the compiler cache the set-up filled (ccache, from requirements.txt; paths
below the venv hashed relative to the compiler's directory): the same generated sources
compile to the same objects, so the 163 compilations are read from the cache and the
code generation, linking and installing run as in any workspace.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
COLCON = VENV_BIN / "colcon"
CCACHE = VENV_BIN / "ccache"
BUILD_ROOT = VENV_BIN.parent / ".manip_dynamics_build"

# Generated or machine-local things that a clone would not contain.
SKIP = {".git", ".venv", "build", "install", "log", "__pycache__", ".pytest_cache",
        "demo_output", ".stamps"}


def _ignore(directory, names):
    return [n for n in names
            if n in SKIP or n.endswith((".egg-info", ".pyc", ".nbi", ".nbc", ".lock"))]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_colcon_builds_both_packages():
    for tool in (COLCON, CCACHE):
        assert tool.exists(), f"{tool.name} not installed in the venv ({tool}); run `make setup`"
    ws = BUILD_ROOT / "colcon-test"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(REPO, ws / "src" / "manip_dynamics", ignore=_ignore)

    prefix = str(VENV_BIN.parent)
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = prefix
    env["AMENT_PREFIX_PATH"] = prefix
    env["CMAKE_PREFIX_PATH"] = prefix
    env.pop("PYTHONPATH", None)  # only what the install space provides
    env.update(CCACHE_DIR=str(BUILD_ROOT / "ccache"), CCACHE_BASEDIR=prefix, CCACHE_NOHASHDIR="1")
    build = subprocess.run(
        [str(COLCON), "build",
         "--base-paths", "src", "src/manip_dynamics/manip_dynamics_interfaces",
         "--parallel-workers", "2",
         "--event-handlers", "console_direct-", "console_cohesion+",
         "--cmake-args", f"-DPython3_EXECUTABLE={sys.executable}", "-DBUILD_TESTING=OFF",
         "-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"],
        cwd=ws, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=540,
    )
    assert build.returncode == 0, build.stdout[-6000:]
    assert "Summary: 2 packages finished" in build.stdout, build.stdout[-3000:]

    install = ws / "install"
    script = install / "manip_dynamics" / "lib" / "manip_dynamics" / "dynamics_node"
    assert script.is_file(), f"console script missing: {script}"
    assert (install / "manip_dynamics" / "share" / "manip_dynamics" / "package.xml").is_file()
    assert (install / "manip_dynamics" / "share" / "ament_index" / "resource_index"
            / "packages" / "manip_dynamics").is_file()

    # In the sourced install space: the interfaces, the package and its entry-point metadata
    # come from the workspace (the venv has its own copies of all three, which must lose).
    probe = r"""
import importlib.metadata, importlib.util
import manip_dynamics_interfaces.srv as srv
from manip_dynamics_interfaces.msg import Dynamics
from manip_dynamics_interfaces.srv import GetMassMatrix, GetTrajectoryTorques
print("SRV", srv.__file__)
req = GetMassMatrix.Request(joint_names=["a", "b"], position=[0.5, -0.5])
assert list(req.position) == [0.5, -0.5]
print("MODULE", importlib.util.find_spec("manip_dynamics.nodes.dynamics_node").origin)
dist = importlib.metadata.distribution("manip_dynamics")
print("DIST", dist.locate_file(""))
eps = {e.name: e.value for e in dist.entry_points if e.group == "console_scripts"}
print("EP", eps.get("dynamics_node"))
"""
    check = subprocess.run(
        ["bash", "-c", 'source install/setup.bash && "$0" -c "$1"', sys.executable, probe],
        cwd=ws, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
    )
    assert check.returncode == 0, check.stdout
    lines = dict(line.split(" ", 1) for line in check.stdout.splitlines()
                 if line.startswith(("SRV ", "MODULE ", "DIST ", "EP ")))
    for key, prefix in (("SRV", "manip_dynamics_interfaces"), ("MODULE", "manip_dynamics"),
                        ("DIST", "manip_dynamics")):
        assert lines[key].startswith(str(install / prefix) + os.sep), check.stdout
    assert lines["EP"] == "manip_dynamics.nodes.dynamics_node:main", check.stdout
    # The generated console script (what `ros2 run` executes) is a Python script naming it.
    text = script.read_text()
    assert text.startswith("#!") and "python" in text.splitlines()[0], text[:200]
    assert "dynamics_node" in text, text

    # `colcon test` runs the package's pytest suite (setup.py's extras_require["test"]
    # names pytest); one ROS test file keeps it short: it needs the workspace's interfaces.
    test = subprocess.run(
        ["bash", "-c", "source install/setup.bash && "
         f"'{COLCON}' test --packages-select manip_dynamics "
         "--event-handlers console_direct- --pytest-args test/test_smoke_ros.py && "
         f"'{COLCON}' test-result --verbose"],
        cwd=ws, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
    )
    summary = [line for line in test.stdout.splitlines() if line.startswith("Summary:")]
    assert test.returncode == 0, test.stdout[-4000:]
    assert summary and " 0 errors, 0 failures" in summary[-1], test.stdout[-4000:]
    ran = int(summary[-1].split()[1])
    assert ran >= 2, test.stdout[-4000:]
    shutil.rmtree(ws)
