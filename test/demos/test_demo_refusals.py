"""`python -m manip_dynamics.demo --urdf ARM` on an arm it cannot run: one line on stderr
(``error: ...`` naming the file and what to fix), exit status 2, before any node starts or
any simulation runs (README, "What an arm's URDF needs")."""
import re
import subprocess
import sys

import pytest
import ros_utils

from manip_dynamics import robots


def _demo(tmp_path, urdf):
    return subprocess.run(
        [sys.executable, "-m", "manip_dynamics.demo", "--urdf", str(urdf), "--output",
         str(tmp_path / "out"), "--no-plots"], cwd=ros_utils.REPO_ROOT,
        env=ros_utils._child_env(None), capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("case", ["no inertia", "no moving joint", "broken URDF"])
def test_an_arm_the_demo_cannot_run_is_refused_in_one_line(case, tmp_path):
    xml = robots.read("planar_2r")
    if case == "no inertia":        # links without <inertial>: MuJoCo cannot simulate them
        xml, expected = (re.sub(r"<inertial>.*?</inertial>", "", xml, flags=re.S),
                         "MuJoCo cannot simulate link 'link1' (moved by joint 'joint1'): "
                         "it has no mass or no inertia")
    elif case == "no moving joint":
        xml, expected = (re.sub(r'type="(revolute|continuous)"', 'type="fixed"', xml),
                         "the URDF has no moving joint")
    else:
        xml, expected = xml.replace("</robot>", ""), "invalid URDF XML"
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(xml)
    proc = _demo(tmp_path, urdf)
    print(proc.stdout[-2000:], proc.stderr[-2000:])
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert expected in proc.stderr
    assert str(urdf) in proc.stderr
    assert not (tmp_path / "out" / "logs").exists() or not any(
        (tmp_path / "out" / "logs").iterdir())            # no node was started
