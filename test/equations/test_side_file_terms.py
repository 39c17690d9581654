"""The closed-form equations with a dynamics side file (issue 34 item 3): M(q) + diag(Ia)
against Pinocchio's crba with ``model.armature`` set, and the side file's friction model
against the formula written out here."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import InputError
from manip_dynamics.equations import derive
from manip_dynamics.equations.__main__ import main

from .arms import assert_close, evaluator, random_chain

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

def pinocchio_mass_matrix(xml, armature, q):
    """Pinocchio's crba (upper triangle mirrored) with model.armature set; the chain's
    joints are revolute or prismatic, one coordinate each (nq = nv = 2, checked)."""
    model = pin.buildModelFromXML(xml)
    assert model.nq == model.nv == 2 and list(model.names)[1:] == ["j1", "j2"]
    model.armature = np.asarray(armature, dtype=float)
    M = pin.crba(model, model.createData(), np.asarray(q, dtype=float))
    return np.triu(M) + np.triu(M, 1).T


SIDE = """
joints:
  j1: {armature: 0.75, friction: {viscous: 0.5, coulomb_positive: 2.0, coulomb_negative: 1.0,
                                  offset: -0.25}}
  j2: {armature: 0.125, friction: {viscous: 0.25, coulomb: 1.5, width: 0.2}}
"""


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    xml = random_chain(2, seed=3, kinds=("revolute", "prismatic"))
    path = tmp_path_factory.mktemp("side") / "chain.dynamics.yaml"
    path.write_text(SIDE)
    return xml, path


def test_mass_matrix_with_armature_equals_pinocchio(chain):
    xml, path = chain
    eq = derive(xml, side_file=str(path))
    f = evaluator(eq, eq.M, eq.tau_fr)
    rng = np.random.default_rng(0)
    for _ in range(6):
        q, qd = rng.uniform(-2, 2, 2), rng.uniform(-2, 2, 2)
        M, fr = f(q, qd)
        assert_close(M, pinocchio_mass_matrix(xml, [0.75, 0.125], q), tol=1e-10,
                     what="M + diag(Ia)")
        written = [0.5 * qd[0] + (2.0 if qd[0] > 0 else 1.0) * np.sign(qd[0]) - 0.25,
                   0.25 * qd[1] + 1.5 * np.tanh(qd[1] / 0.2)]
        assert_close(fr.ravel(), written, tol=1e-12, what="tau_fr")
    without = derive(xml)
    assert_close(evaluator(without, without.M)(np.zeros(2))[0] + np.diag([0.75, 0.125]),
                 f(np.zeros(2), np.zeros(2))[0], what="M without the side file")


def test_symbolic_armature_and_the_cli(chain, tmp_path, capsys):
    xml, path = chain
    eq = derive(xml, side_file=str(path), symbolic_parameters=True)
    names = {s.name: v for s, v in eq.parameters.items()}
    assert names["Ia_1"] == 0.75 and names["Ia_2"] == 0.125 and names["f0_1"] == -0.25
    assert names["fcn_1"] == 1.0 and "fcn_2" not in names
    urdf = tmp_path / "chain.urdf"
    urdf.write_text(xml)
    assert main([str(urdf), "--format", "sympy", "--quiet", "--symbolic-parameters",
                 "--dynamics-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Ia_1" in out and "tanh" in out and "Piecewise" in out
    bad = tmp_path / "bad.dynamics.yaml"
    bad.write_text("joints: {j2: {friction: {width: -1.0}}}\n")
    assert main([str(urdf), "--quiet", "--dynamics-file", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: side file") and "friction.width = -1.0" in err[-1]
    with pytest.raises(InputError, match="armature: unknown joint 'j9'"):
        derive(xml, armature={"j9": 1.0})
