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


def test_a_tip_the_root_or_fixed_to_it_is_refused_saying_no_joint_moves_it():
    """--tip at the root link (or a link welded to it): nothing to derive, said so (it was
    called a tree branching off the chain from the root to itself)."""
    xml = random_chain(2, seed=1)
    with pytest.raises(URDFError, match=r"tip link 'base' is the root: no joint moves it"):
        derive(xml, tip="base")
    welded = xml.replace("</robot>", '<link name="plate"/><joint name="weld_plate" '
                         'type="fixed"><parent link="base"/><child link="plate"/></joint></robot>')
    with pytest.raises(URDFError, match=r"tip link 'plate' is fixed to the root 'base': no "
                                        r"joint moves it"):
        derive(welded, tip="plate")


@pytest.mark.parametrize("option", [["--time-limit", "0"], ["--time-limit", "-5"],
                                    ["--time-limit", "nan"], ["--gravity", "nan", "0", "-9.81"],
                                    ["--gravity", "0", "inf", "0"], ["--tip", "base_link"],
                                    ["-o", "{tmp}/no/such/folder/rp.tex"]])
def test_cli_unusable_arguments_exit_2_with_one_line(option, tmp_path, capsys):
    """Each: exit status 2 and one ``error:`` line naming the option (was: a ValueError
    traceback for the time limit, g(q) = 0 and exit 0 for a NaN gravity, FileNotFoundError
    after the whole derivation for -o, a 'tree' message for the root as tip)."""
    arm = str(ROOT / "manip_dynamics" / "robots" / "planar_rp.urdf")
    option = [o.replace("{tmp}", str(tmp_path)) for o in option]
    assert main([arm, *option]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    expected = {"--time-limit": "--time-limit: must be a finite number of seconds > 0",
                "--gravity": "--gravity: must be three finite numbers",
                "--tip": "tip link 'base_link' is the root: no joint moves it",
                "-o": "--output: folder '" + str(tmp_path / "no" / "such" / "folder")}[option[0]]
    assert expected in err[0], err


def test_the_api_refuses_a_nonfinite_gravity_and_time_limit():
    xml = uf.rp_arm(2.0, 1.0, (0.3, 0.0), 0.06, 0.01)
    with pytest.raises(InputError, match=r"gravity: must be three finite numbers"):
        derive(xml, gravity=(float("nan"), 0.0, -9.81))
    for bad in (0.0, -5.0, float("nan")):
        with pytest.raises(InputError, match=r"time limit: must be a finite number"):
            derive(xml, time_limit=bad)


def test_the_time_limit_covers_the_printing():
    """One Budget around derive and latex_document (as the command line does): the limit
    passes during the printing (a progress callback waits past it at the first printed
    entry), and DerivationTimeout names the printing stage."""
    from manip_dynamics.equations import Budget
    from manip_dynamics.equations.latex import latex_document
    limit = 4.0

    def wait_in_printing(stage, done, total, elapsed):
        if stage == "printing LaTeX":
            time.sleep(limit - elapsed + 1.0)      # the timer interrupts this sleep

    xml = uf.rp_arm(2.0, 1.0, (0.3, 0.0), 0.06, 0.01)
    with pytest.raises(DerivationTimeout, match=r"time limit of 4 s .* while printing LaTeX "
                                                r"\(1/\d+\)"):
        with Budget(limit, wait_in_printing) as budget:
            eq = derive(xml, budget=budget)
            assert budget.elapsed() < limit, "the derivation alone took the limit"
            latex_document(eq, budget=budget)


@pytest.mark.parametrize("fmt,stage", [("latex", "printing LaTeX"), ("sympy", "printing sympy"),
                                       ("c", "printing mass_matrix")])
def test_cli_shows_the_printing_progress(fmt, stage, tmp_path, capsys):
    """Progress on stderr covers the printing, not only the derivation."""
    arm = str(ROOT / "manip_dynamics" / "robots" / "planar_rp.urdf")
    assert main([arm, "--format", fmt, "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "forward kinematics" in err and stage in err, err


def test_cli_time_limit_in_one_line(capsys):
    """A limit too small for anything: exit 2 and one line naming the limit and the stage."""
    arm = str(ROOT / "manip_dynamics" / "robots" / "planar_2r.urdf")
    assert main([arm, "--quiet", "--time-limit", "1e-6"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: symbolic path stopped at its time "
                                               "limit of 1e-06 s"), err
