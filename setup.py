from glob import glob

from setuptools import find_packages, setup

package_name = "manip_dynamics"


def files(pattern):
    return sorted(glob(pattern))


setup(
    name=package_name,
    version="0.1.0",
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
    install_requires=["setuptools"],
    extras_require={"test": ["pytest"]},   # colcon test runs pytest when this names it
    zip_safe=False,                        # robots.path() returns files on disk
    maintainer="manip_dynamics maintainers",
    maintainer_email="maintainers@manip-dynamics.dev",
    description="Manipulator dynamics (gravity, Coriolis, mass matrix, effective inertia) "
                "from a URDF and joint_states, as ROS 2 topics, services and markers.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "dynamics_node = manip_dynamics.nodes.dynamics_node:main",
            "arm_simulator = manip_dynamics.nodes.arm_simulator:main",
            "computed_torque_controller = manip_dynamics.nodes.computed_torque_controller:main",
            "recorder = manip_dynamics.nodes.recorder:main",
        ],
    },
)
