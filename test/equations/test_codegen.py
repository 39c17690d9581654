"""Generated Python and C (compiled with the system C compiler, loaded with ctypes) equal
the numeric core's g(q), M(q) and C(q, qd) qd to 1e-12 at random states."""
from __future__ import annotations

import ctypes
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from manip_dynamics.core import RobotModel
from manip_dynamics.equations.codegen import c_source, python_source

from .arms import assert_close, derived, random_chain

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROBOTS = pathlib.Path(__file__).resolve().parents[2] / "manip_dynamics" / "robots"
CC = shutil.which("gcc") or shutil.which("cc")


def _cases():
    yield "planar_2r", (ROBOTS / "planar_2r.urdf").read_text(), True
    yield "planar_rp", (ROBOTS / "planar_rp.urdf").read_text(), True
    yield "chain3", random_chain(3, seed=5, general=False), False


CASES = {name: (xml, simplify) for name, xml, simplify in _cases()}


def _states(n, count=10, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)) for _ in range(count)]


def _load_c(src, tmp_path, name):
    # gcc is a prerequisite of `make test` (README, "The two commands"): missing, these tests
    # fail (never skip)
    assert CC is not None, "no C compiler (gcc or cc) on PATH: a prerequisite of make test"
    c_file, so = tmp_path / f"{name}.c", tmp_path / f"{name}.so"
    c_file.write_text(src)
    subprocess.run([CC, "-std=c99", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o",
                    str(so), str(c_file), "-lm"], check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(so))


def _call(lib, fn, n_out, *arrays):
    out = np.zeros(n_out)
    ptr = ctypes.POINTER(ctypes.c_double)
    args = [np.ascontiguousarray(a, dtype=float).ctypes.data_as(ptr) for a in arrays]
    getattr(lib, fn)(*args, out.ctypes.data_as(ptr))
    return out


@pytest.mark.parametrize("name", CASES)
def test_generated_python_equals_the_core(name):
    xml, simplify = CASES[name]
    model = RobotModel.from_urdf_string(xml)
    eq = derived(xml, simplify=simplify)
    src = python_source(eq)
    assert "import math" in src and "sympy" not in src and "numpy" not in src
    ns = {}
    exec(compile(src, f"<generated {name}>", "exec"), ns)
    for q, qd in _states(model.n):
        assert_close(ns["gravity"](list(q)), model.gravity_torques(q), what="g")
        assert_close(ns["mass_matrix"](list(q)), model.mass_matrix(q), what="M")
        assert_close(ns["coriolis"](list(q), list(qd)), model.coriolis_torques(q, qd), what="c")


@pytest.mark.parametrize("name", CASES)
def test_generated_c_equals_the_core(name, tmp_path):
    xml, simplify = CASES[name]
    model = RobotModel.from_urdf_string(xml)
    eq = derived(xml, simplify=simplify)
    src = c_source(eq, prefix="arm")
    assert [ln for ln in src.splitlines() if ln.startswith("#include")] == ["#include <math.h>"]
    lib = _load_c(src, tmp_path, name)
    n = model.n
    for q, qd in _states(n):
        assert_close(_call(lib, "arm_gravity", n, q), model.gravity_torques(q), what="g")
        assert_close(_call(lib, "arm_mass_matrix", n * n, q).reshape(n, n),
                     model.mass_matrix(q), what="M")
        assert_close(_call(lib, "arm_coriolis", n, q, qd), model.coriolis_torques(q, qd),
                     what="c")


def test_generated_c_with_symbolic_parameters_takes_them_at_run_time(tmp_path):
    """One compiled function, the parameters passed as p[]: the URDF's values give the
    core's numbers; another link length gives the core's numbers for the edited URDF."""
    xml = CASES["planar_2r"][0]
    eq = derived(xml, simplify=True, symbolic_parameters=True)
    names = [s.name for s in eq.parameters]
    lib = _load_c(c_source(eq, prefix="arm"), tmp_path, "sym")
    p = np.array(list(eq.parameters.values()))
    edited = xml.replace('<origin xyz="0.6 0 0" rpy="0 0 0"/>',
                         '<origin xyz="0.75 0 0" rpy="0 0 0"/>')
    assert edited != xml
    p2 = p.copy()
    p2[names.index("l_1")] = 0.75
    for values, urdf in ((p, xml), (p2, edited)):
        model = RobotModel.from_urdf_string(urdf)
        for q, qd in _states(2, count=4):
            assert_close(_call(lib, "arm_gravity", 2, q, values), model.gravity_torques(q))
            assert_close(_call(lib, "arm_mass_matrix", 4, q, values).reshape(2, 2),
                         model.mass_matrix(q))
            assert_close(_call(lib, "arm_coriolis", 2, q, qd, values),
                         model.coriolis_torques(q, qd))
