"""Bad input to the symbolic path: a clear error of the project's classes naming the limit
or the joint, never a hang; the command line turns them into exit status 2."""
from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import pytest

from core import urdf_factory as uf
from manip_dynamics.core.errors import InputError, UnsupportedJointError, URDFError
from manip_dynamics.equations import DerivationTimeout, derive
from manip_dynamics.equations.__main__ import main

from .arms import random_chain

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_a_tree_is_refused_naming_the_branch():
    xml = uf.random_tree(seed=1, with_mimic=False)
    with pytest.raises(URDFError, match=r"serial chains only: joints .*'b1'.* branch off"):
        derive(xml, tip="tool_a")


def test_a_mimic_joint_is_refused_naming_it():
    with pytest.raises(UnsupportedJointError, match=r"mimic joints \('b3'\)"):
        derive(uf.random_tree(seed=1, with_mimic=True), tip="tool_b")


def test_too_many_joints_names_the_limit():
    with pytest.raises(InputError, match=r"7 joints .* limit is 6 joints"):
        derive(random_chain(7, seed=1))
    with pytest.raises(InputError, match=r"limit is 2 joints"):
        derive(random_chain(3, seed=1), max_joints=2)


def test_unknown_tip_and_joints():
    xml = random_chain(2, seed=1)
    with pytest.raises(URDFError, match="tip link 'nowhere'"):
        derive(xml, tip="nowhere")
    with pytest.raises(InputError, match=r"\['j9'\] are not distinct moving joints"):
        derive(xml, joints=["j1", "j9"])


def test_time_limit_stops_a_slow_simplification_with_a_message():
    """A limit far below what the simplification needs: DerivationTimeout naming the stage,
    raised soon after the limit (the timer interrupts inside sympy), not a hang."""
    xml = random_chain(3, seed=2, general=False)
    t0 = time.monotonic()
    with pytest.raises(DerivationTimeout, match=r"time limit of 0.3 s .* while "):
        derive(xml, simplify=True, time_limit=0.3)
    assert time.monotonic() - t0 < 5.0


def test_progress_reports_the_stages():
    seen = []
    derive(uf.rp_arm(2.0, 1.0, (0.3, 0.0), 0.06, 0.01), simplify=True,
           progress=lambda stage, done, total, t: seen.append(stage))
    for stage in ("forward kinematics", "mass matrix", "simplifying M", "dM/dq", "gravity",
                  "simplifying C qd", "simplifying g", "done"):
        assert stage in seen


def test_cli_errors_exit_2_with_the_message(tmp_path, capsys):
    tree = tmp_path / "tree.urdf"
    tree.write_text(uf.random_tree(seed=1, with_mimic=False))
    assert main([str(tree), "--tip", "tool_a", "--quiet"]) == 2
    assert "error: the symbolic path derives serial chains only" in capsys.readouterr().err
    assert main([str(tmp_path / "arm.urdf.xacro"), "--quiet"]) == 2
    err = capsys.readouterr().err             # a missing .xacro: the reader names the file
    assert "cannot read" in err and "arm.urdf.xacro" in err, err
    assert main([str(tmp_path / "missing.urdf"), "--quiet"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_reads_xacro_with_arguments(tmp_path):
    """A .xacro with an argument (through core/dynamics/description.py, as every URDF reader here):
    the generated g(q) is that of the expanded URDF with the argument's value, checked
    against the core on that URDF; a missing argument value is refused naming it."""
    import numpy as np
    from manip_dynamics import RobotModel
    xml = uf.point_mass_2r(3.0, 2.0, 0.6, 0.45)
    xacro = xml.replace("<robot ", '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" ', 1)
    xacro = xacro.replace('<mass value="2.0"/>', '<mass value="$(arg m2)"/>', 1)
    xacro = xacro.replace("<link ", '<xacro:arg name="m2" default="1.0"/><link ', 1)
    assert "$(arg m2)" in xacro
    arm = tmp_path / "arm.urdf.xacro"
    arm.write_text(xacro)
    out = tmp_path / "arm.py"
    assert main([str(arm), "--xacro-arg", "m2:=2.0", "--format", "python", "--quiet",
                 "--gravity", "0", "-9.81", "0", "--output", str(out)]) == 0
    space = {}
    exec(out.read_text(), space)
    model = RobotModel.from_urdf_string(xml, gravity=(0.0, -9.81, 0.0))
    for q in ([0.3, -0.7], [1.2, 2.0]):
        np.testing.assert_allclose(space["gravity"](q), model.gravity_torques(np.array(q)),
                                   rtol=1e-12, atol=1e-12)


def test_cli_writes_each_format(tmp_path):
    """Each format through main(), as the command line calls it."""
    arm = str(ROOT / "manip_dynamics" / "robots" / "planar_rp.urdf")
    for fmt, marker in (("latex", r"\begin{align*}"), ("sympy", "M = Matrix("),
                        ("python", "def coriolis(q, qd):"), ("c", "void planar_rp_gravity(")):
        out = tmp_path / f"rp.{fmt}"
        assert main([arm, "--format", fmt, "--quiet", "--output", str(out)]) == 0
        assert marker in out.read_text()


@pytest.mark.slow
def test_python_dash_m_runs(tmp_path):
    """python -m manip_dynamics.equations as a user runs it (a fresh interpreter)."""
    out = tmp_path / "rp.tex"
    subprocess.run([sys.executable, "-m", "manip_dynamics.equations",
                    str(ROOT / "manip_dynamics" / "robots" / "planar_rp.urdf"), "--quiet",
                    "--output", str(out)], check=True, cwd=ROOT, timeout=120)
    assert r"\begin{align*}" in out.read_text()


@pytest.mark.slow
def test_importing_equations_never_imports_rclpy():
    """The package is ROS-free (its docstring): a fresh interpreter importing it and running
    a derivation has no rclpy module loaded."""
    code = ("import sys, warnings; warnings.simplefilter('ignore'); "
            "import manip_dynamics.equations as e, manip_dynamics.equations.__main__; "
            "e.derive(open('manip_dynamics/robots/planar_rp.urdf').read()); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('rclpy', 'rosidl_runtime_py')]; "
            "sys.exit(1 if bad else 0)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)
