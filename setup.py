"""manip_dynamics: one setup.py for both worlds.

* ROS 2 (colcon, ``ament_python``): colcon runs this file; the dependencies come from
  package.xml through rosdep, the console scripts go to ``lib/manip_dynamics`` (setup.cfg)
  where ``ros2 run`` looks, the launch/config/rviz files to ``share/manip_dynamics``.
* pip (``pip install .``, ``pip wheel .``, ``python -m build``): ``install_requires`` brings
  the core's numpy, scipy and numba (``from manip_dynamics import RobotModel`` needs
  nothing else, no ROS); the extras bring the optional parts, whose imports say which
  extra is missing (manip_dynamics/core/extras.py).

The version is package.xml's (one source of truth). The ranges below contain the exact
pins of requirements.txt, which is what the tests run on (test/test_packaging.py checks
both).
"""
import xml.etree.ElementTree as ET
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

package_name = "manip_dynamics"
HERE = Path(__file__).resolve().parent


def files(pattern):
    return sorted(glob(pattern))


def package_xml_version():
    """<version> of package.xml, the version of both the ROS package and the pip one."""
    return ET.parse(HERE / "package.xml").getroot().findtext("version").strip()


# Lower bounds: the core's were checked by hand once (docs/building.md, "pip"): README's
# "Python, without ROS" blocks give the same numbers on numpy 2.3.5, scipy 1.16.3 and
# numba 0.65.1, while numba 0.61.2 and 0.60.0 cannot compile the kernels. The extras'
# are the minor releases of the pins the suite runs on.
EXTRAS = {
    "sim": ["mujoco>=4.0"],                         # manip_dynamics.sim: the MuJoCo plant
    "identification": ["cvxpy>=1.9", "clarabel>=0.11", "scs>=3.3",  # the consistent fit
                       "mcap>=1.6", "mcap-ros2-support>=0.6"],     # core/identification/recording
    "plots": ["matplotlib>=3.11", "pillow>=13"],    # figures, the demo's GIF
    "xacro": ["xacro>=2.1"],
    "equations": ["sympy>=1.14"],
    "safety": ["PyYAML>=6.0"],                     # the ISO/TS 15066 body model (YAML)
}
EXTRAS["all"] = sorted({r for reqs in EXTRAS.values() for r in reqs})
# colcon test runs pytest when extras_require["test"] names it; the rest is the suite's
# oracles and fuzzer (its ROS tests also need a ROS 2 environment).
EXTRAS["test"] = ["pytest>=9.0", "pytest-timeout>=2.4", "hypothesis>=6.170", "pin>=4.1",
                  "example-robot-data>=6.0"]

setup(
    name=package_name,
    version=package_xml_version(),
    packages=find_packages(exclude=["test*"]),
    package_data={package_name: ["robots/*.urdf", "safety/*.yaml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", files("launch/*.py") + files("launch/*.xml")
         + files("launch/*.yaml")),
        ("share/" + package_name + "/config", files("config/*.yaml")),
        ("share/" + package_name + "/rviz", files("rviz/*.rviz")),
        ("share/" + package_name + "/urdf", files("manip_dynamics/robots/*.urdf")),
    ],
    python_requires=">=3.11",
    install_requires=["numpy>=2.3,<3", "scipy>=1.16", "numba>=0.65"],
    extras_require=EXTRAS,
    zip_safe=False,                        # robots.path() returns files on disk
    maintainer="manip_dynamics maintainers",
    maintainer_email="maintainers@manip-dynamics.dev",
    description="Manipulator dynamics (gravity, Coriolis, mass matrix, effective inertia, "
                "contact, identification) from a URDF: a ROS-free Python core, and ROS 2 "
                "nodes publishing it from joint_states.",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    keywords=["robotics", "dynamics", "urdf", "manipulator", "ros2", "rigid-body"],
    classifiers=[
        "Development Status :: 4 - Beta",
        "Intended Audience :: Science/Research",
        "Intended Audience :: Developers",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.11",
        "Topic :: Scientific/Engineering",
        "Topic :: Scientific/Engineering :: Physics",
    ],
    entry_points={
        "console_scripts": [
            "dynamics_node = manip_dynamics.nodes.dynamics_node:main",
            "arm_simulator = manip_dynamics.nodes.arm_simulator:main",
            "computed_torque_controller = manip_dynamics.nodes.computed_torque_controller:main",
            "recorder = manip_dynamics.nodes.recorder:main",
        ],
    },
)
