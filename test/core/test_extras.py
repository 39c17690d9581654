"""Missing optional libraries: each optional part says, in one line, which extra to install.

Each case runs in a fresh interpreter whose import system is given a blocker
(``sys.meta_path[0]``) that raises ``ModuleNotFoundError`` for the blocked top-level
packages, as Python does for a package that is not installed: the real modules are never
faked, only made unfindable. Then (a) the top-level package and every ROS-free part import
with all optional libraries and ROS blocked, and load none of them; (b) each optional part
raises MissingExtraError (an ImportError) whose message ends in the pip command of its
extra, or, for the ROS parts, MissingDependencyError saying how to get ROS 2.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from manip_dynamics.core.extras import EXTRAS, ROS_MODULES

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = sorted(EXTRAS) + list(ROS_MODULES)

# Runs in the child: argv[1] the blocked top-level names, argv[2] the cases
# [(label, python statement)]; prints [(label, exception type, message, exit code)].
CHILD = r'''
import contextlib, importlib.abc, io, json, sys
blocked = set(json.loads(sys.argv[1]))

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

assert not [m for m in sys.modules if m.partition(".")[0] in blocked], "already imported"
sys.meta_path.insert(0, Blocker())
out = []
for label, statement in json.loads(sys.argv[2]):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            exec(statement, {})
        out.append((label, None, err.getvalue(), None))
    except SystemExit as e:
        out.append((label, "SystemExit", err.getvalue(), e.code))
    except Exception as e:
        out.append((label, type(e).__name__ + "|" + ",".join(c.__name__ for c in type(e).__mro__),
                    str(e), None))
out.append(("loaded", None, sorted({m.partition(".")[0] for m in sys.modules} & blocked), None))
print(json.dumps(out))
'''


def run_blocked(blocked, cases, tmp_path, process_stderr=False):
    """{label: (exception kind or None, message or captured sys.stderr, exit code)} of the
    cases run in a child with ``blocked`` unfindable; with ``process_stderr``, also the
    child's whole stderr (what C code, e.g. rclpy's logger, writes to fd 2)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(sorted(blocked)),
                        json.dumps(cases)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = {label: (kind, message, code)
           for label, kind, message, code in json.loads(r.stdout.splitlines()[-1])}
    return (res, r.stderr) if process_stderr else res


def hint(extra):
    return f'pip install "manip_dynamics[{extra}]"'


def assert_missing_extra(result, needed_by, module, extra):
    kind, message, _ = result
    assert kind is not None and kind.startswith("MissingExtraError|"), result
    assert "ImportError" in kind.split("|")[1].split(","), kind    # except ImportError works
    assert message == f"{needed_by} needs {module}, which is not installed: {hint(extra)}"


REC = "manip_dynamics.core.identification.recording"
FIT = "manip_dynamics.core.identification.consistent_fit"
ROS_FREE = ["manip_dynamics", "manip_dynamics.core", "manip_dynamics.robots",
            "manip_dynamics.rules", REC,
            "manip_dynamics.identify", "manip_dynamics.sim", "manip_dynamics.sim.model_plant",
            "manip_dynamics.demo", "manip_dynamics.demo_identification",
            "manip_dynamics.demos.closed_loop", "manip_dynamics.demos.identification"]


def test_everything_optional_blocked(tmp_path):
    """Without any optional library or ROS: the core imports and works, loads none of them,
    and every optional part names its extra (or ROS 2) in one line."""
    mcap = tmp_path / "run.mcap"
    mcap.write_bytes(b"")
    from manip_dynamics import robots
    urdf = robots.path("planar_2r")
    cases = [(m, f"import {m}") for m in ROS_FREE] + [
        ("core works", "from manip_dynamics import RobotModel, robots\n"
                       "m = RobotModel.from_urdf_file(robots.path('planar_2r'))\n"
                       "assert m.gravity_torques([0.0, 0.0]).shape == (2,)"),
        ("scene", "import manip_dynamics.sim.scene"),
        ("plant", "import manip_dynamics.sim.mujoco_plant"),
        ("render", "import manip_dynamics.sim.render"),
        ("read", f"from {REC} import read_joint_states\n"
                 f"read_joint_states({str(mcap)!r})"),
        ("write", f"from {REC} import write_joint_states\n"
                  "write_joint_states('x.mcap', [0.0], ['a'], [[0.0]])"),
        ("recorder file", f"from {REC} import SerializedJointStateWriter\n"
                          "SerializedJointStateWriter('y.mcap')"),
        ("identify cli", "from manip_dynamics.identify import main\n"
                         f"raise SystemExit(main([{str(mcap)!r}, '--urdf', {urdf!r}, "
                         "'--out', 'b.urdf']))"),
        ("identify cli no plot", "from manip_dynamics.identify import main\n"
                                 f"raise SystemExit(main([{str(mcap)!r}, '--urdf', {urdf!r}, "
                                 "'--out', 'b.urdf', '--no-plot']))"),
        ("nodes", "import manip_dynamics.nodes.dynamics_node"),
        ("demo", "from manip_dynamics.demo import main\nmain([])"),
        ("equations", "import manip_dynamics.equations"),
        ("consistent fit", "import numpy as np\n"
                           f"from {FIT} import consistent_fit\n"
                           "consistent_fit(np.eye(10), np.ones(10), 0.0, np.ones(10), 1)"),
        ("body model", "from manip_dynamics.safety import BodyModel\nBodyModel.load()"),
        ("safety core", "import manip_dynamics.safety"),
    ]
    res = run_blocked(OPTIONAL, cases, tmp_path)
    assert res["safety core"][0] is None, res["safety core"]
    assert_missing_extra(res["equations"], "manip_dynamics.equations", "sympy", "equations")
    assert_missing_extra(res["consistent fit"], FIT, "cvxpy",
                         "identification")
    assert_missing_extra(res["body model"], "manip_dynamics.safety.body_model", "yaml",
                         "safety")
    for m in ROS_FREE + ["core works"]:
        assert res[m][0] is None, (m, res[m])
    assert res["loaded"][1] == [], res["loaded"]
    assert_missing_extra(res["scene"], "manip_dynamics.sim.scene", "mujoco", "sim")
    assert_missing_extra(res["plant"], "manip_dynamics.sim.scene", "mujoco", "sim")
    assert_missing_extra(res["render"], "manip_dynamics.sim.render", "mujoco", "sim")
    assert_missing_extra(res["read"], REC, "mcap", "identification")
    assert_missing_extra(res["write"], REC, "mcap_ros2",
                         "identification")
    assert_missing_extra(res["recorder file"], REC, "mcap",
                         "identification")
    # the CLI: one line on stderr and status 1, before any work (the plot check first)
    assert res["identify cli"][2] == 1, res["identify cli"]
    assert res["identify cli"][1] == ("error: the torque plot (--no-plot skips it) needs "
                                      f"matplotlib, which is not installed: {hint('plots')}\n")
    assert res["identify cli no plot"][1] == (
        f"error: {REC} needs mcap, which is not installed: "
        f"{hint('identification')}\n"), res["identify cli no plot"]
    kind, message, _ = res["nodes"]
    assert kind.startswith("MissingDependencyError|") and "ImportError" in kind, res["nodes"]
    assert message.startswith("manip_dynamics.nodes needs ROS 2 (rclpy and "
                              "manip_dynamics_interfaces not found): build this package in "
                              "a ROS 2 workspace with colcon"), message
    assert "\n" not in message
    assert res["demo"][2] == 2, res["demo"]
    assert res["demo"][1].startswith("error: python -m manip_dynamics.demo needs ROS 2 (rclpy")
    assert res["demo"][1].count("\n") == 1, res["demo"]


def test_one_library_missing_at_a_time(tmp_path):
    """With ROS and the rest installed, each missing library is the one named."""
    cases = {
        "PIL": ("render gif", "import numpy as np\nfrom manip_dynamics.sim import render\n"
                              "render.save_png(np.zeros((4, 4, 3), np.uint8), 'a.png')"),
        "mujoco": ("demo", "from manip_dynamics.demo import main\nmain([])"),
        "mcap_ros2": ("identification demo",
                      "from manip_dynamics.demo_identification import main\nmain([])"),
    }
    for blocked, case in cases.items():
        res = run_blocked([blocked], [case], tmp_path)
        assert res["loaded"][1] == [], res
        results = res[case[0]]
        if blocked == "PIL":
            assert_missing_extra(results, "manip_dynamics.sim.render", "PIL", "plots")
        else:
            prog = "python -m manip_dynamics." + case[1].split()[1].split(".")[1]
            assert results[2] == 2, results
            assert results[1] == (f"error: {prog} needs {blocked}, which is not installed: "
                                  f"{hint(EXTRAS[blocked])}\n"), results


def test_import_extra_lets_other_import_errors_through():
    """A ModuleNotFoundError from inside an installed optional package (a broken install)
    is not mistaken for the package being absent."""
    from manip_dynamics.core.extras import import_extra
    with pytest.raises(ModuleNotFoundError) as info:
        import_extra("mcap.no_such_submodule", "this test")
    assert info.type is ModuleNotFoundError
    with pytest.raises(KeyError):
        import_extra("json", "this test")          # not an optional package


HOBBY = ROOT / "test" / "data" / "hobby_arm_description"
HOBBY_XACRO = HOBBY / "urdf" / "hobby_arm.urdf.xacro"


def test_xacro_missing_plain_urdfs_load_and_xacro_files_say_which_extra(tmp_path):
    """Without xacro: every example-robot-data URDF (38 of 69 declare xmlns:xacro, none has
    a xacro element or substitution) loads as written; a xacro file gives the one-line
    extras message in the core, both CLIs, the dynamics node and the simulator (exit 2,
    "cannot start: ..."), and the demo (exit 2)."""
    from .dynamics.test_pinocchio import ERD
    needed = f"the xacro file {str(HOBBY_XACRO)!r}"
    args = f"[{str(HOBBY_XACRO)!r}, '--xacro-arg', 'prefix:=h_', '--package-path', {str(HOBBY)!r}"
    mcap = tmp_path / "run.mcap"
    mcap.write_bytes(b"")
    ros = "'--ros-args', '-p', 'urdf_file:=" + str(HOBBY_XACRO) + "'"
    cases = [
        ("example-robot-data", "import glob, sys\n"
         "from manip_dynamics import RobotModel\n"
         "from manip_dynamics.core.dynamics.description import load_description\n"
         f"files = sorted(glob.glob({ERD!r} + '/**/*.urdf', recursive=True))\n"
         "same = [load_description(f) == open(f, encoding='utf-8').read() for f in files]\n"
         "declared = sum('xmlns:xacro' in open(f, encoding='utf-8').read() for f in files)\n"
         "import warnings; warnings.simplefilter('ignore')\n"
         f"m = RobotModel.from_urdf_file({ERD!r} + '/ur_description/urdf/ur5_robot.urdf')\n"
         "sys.stderr.write(f'{len(files)} {sum(same)} {declared} {m.n}')"),
        ("core", "from manip_dynamics import RobotModel\n"
                 f"RobotModel.from_urdf_file({str(HOBBY_XACRO)!r})"),
        ("equations", "from manip_dynamics.equations.__main__ import main\n"
                      f"raise SystemExit(main({args}, '--quiet']))"),
        ("identify", "from manip_dynamics.identify import main\n"
                     f"raise SystemExit(main([{str(mcap)!r}, '--urdf', {args[1:]}, "
                     "'--out', 'b.urdf', '--no-plot']))"),
        ("demo", "from manip_dynamics.demo import main\n"
                 f"raise SystemExit(main(['--urdf', {args[1:]}, '--output', 'd', "
                 "'--no-plots']))"),
        ("node", "from manip_dynamics.nodes.dynamics_node import main\n"
                 f"raise SystemExit(main(['dynamics_node', {ros}]))"),
        ("simulator", "from manip_dynamics.nodes.arm_simulator import main\n"
                      f"raise SystemExit(main(['arm_simulator', {ros}]))"),
    ]
    res, stderr = run_blocked(["xacro"], cases, tmp_path, process_stderr=True)
    assert res["loaded"][1] == [], res["loaded"]
    assert res["example-robot-data"][:1] == (None,), res["example-robot-data"]
    assert res["example-robot-data"][1] == "69 69 38 6", res["example-robot-data"]
    line = f"{needed} needs xacro, which is not installed: {hint('xacro')}"
    assert_missing_extra(res["core"], needed, "xacro", "xacro")
    assert res["equations"][1:] == (f"error: {line}\n", 2), res["equations"]
    assert res["identify"][1:] == (f"error: {line}\n", 1), res["identify"]
    assert res["demo"][1:] == (f"error: {line}\n", 2), res["demo"]
    for node in ("node", "simulator"):
        assert res[node][2] == 2, res[node]
    fatal = [ln for ln in stderr.splitlines() if "cannot start:" in ln]
    assert len(fatal) == 2 and all(ln.endswith(line) for ln in fatal), stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
