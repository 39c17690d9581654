"""Closed-loop simulation for ROS 2 users: simulator + dynamics node + controller + RViz.

    ros2 launch manip_dynamics sim_demo.launch.py                     # Panda, tracking
    ros2 launch manip_dynamics sim_demo.launch.py mode:=gravity       # hold the pose
    ros2 launch manip_dynamics sim_demo.launch.py rviz:=false
    ros2 param set /computed_torque_controller mode off               # watch it fall
    ros2 launch manip_dynamics sim_demo.launch.py urdf_file:=arm.urdf.xacro \
        xacro_args:="prefix:=a_" tip_link:=tool0 fixed_frame:=a_base_link      # your arm

The same loop as ``make demo`` (docs/simulation.md), on the MuJoCo plant:

    arm_simulator --joint_states--> dynamics_node --~/dynamics--> computed_torque_controller
         ^                                                               |
         +------------------------- effort_command ----------------------+

robot_state_publisher turns joint_states into TF from the installed URDF
(share/manip_dynamics/urdf/<robot>.urdf, the embedded robot the simulator uses) and
publishes robot_description, so the simulator's own description publisher is switched
off. RViz shows the robot and the dynamics node's ~/inertia_markers (rviz/dynamics.rviz).
Parameters: ``config`` (default share/manip_dynamics/config/sim_demo.yaml, written for the
Panda); the ``mode`` argument overrides the controller's mode.

Your arm: ``urdf_file:=`` a URDF or xacro file (``xacro_args:=`` its arguments) replaces
the embedded ``robot``; every per-joint setting the config holds for the Panda (start
pose, home, tracking amplitude and frequency, gains) and the scene (floor height, capsule radius)
are then sized from the arm's model by the rules of ``make demo ROBOT=...``
(manip_dynamics/demos/scenario.py). To give them yourself instead, put them in your own
``config:=`` file and pass ``size_from_model:=false``.
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def _sized_from_model(urdf_file, xacro_args, tip):
    """(URDF text, simulator overrides, controller overrides) of the arm in urdf_file
    (``tip``: the task frame, '' = the model's default tip)."""
    from manip_dynamics import RobotModel
    from manip_dynamics.core.dynamics.description import load_description
    from manip_dynamics.demos.scenario import scenario_for

    xml = load_description(os.path.expanduser(urdf_file), xacro_args or None)
    model = RobotModel.from_urdf_string(xml)
    scenario = scenario_for(model, tip or model.default_tip, xml)
    simulator = {"initial_positions": scenario["q0"],
                 "floor_height": scenario["floor_height"],
                 "collision_radius": scenario["collision_radius"]}
    controller = {"home": scenario["q0"], "amplitude": scenario["amplitude"],
                  "frequency": scenario["frequency"], "kp": [scenario["kp"]],
                  "kd": [scenario["kd"]]}
    return xml, simulator, controller


def _nodes(context):
    """The simulator, dynamics node, controller and robot_state_publisher, for the
    embedded robot or, with urdf_file, the user's arm (sized from its model)."""
    share = FindPackageShare("manip_dynamics")
    robot = LaunchConfiguration("robot")
    config = LaunchConfiguration("config")
    urdf = PathJoinSubstitution([share, "urdf", [robot, ".urdf"]])
    user_urdf = LaunchConfiguration("urdf_file").perform(context)
    xacro_args = LaunchConfiguration("xacro_args").perform(context)
    sim_sized, ctl_sized = {}, {}
    if user_urdf:
        description, sim_sized, ctl_sized = _sized_from_model(
            user_urdf, xacro_args, LaunchConfiguration("tip_link").perform(context))
        if LaunchConfiguration("size_from_model").perform(context) != "true":
            sim_sized, ctl_sized = {}, {}
        urdf = user_urdf
    else:
        description = Command(["cat ", urdf])

    simulator = Node(
        package="manip_dynamics",
        executable="arm_simulator",
        name="arm_simulator",
        output="screen",
        parameters=[config, {
            "robot": ParameterValue(robot, value_type=str),
            "urdf_file": user_urdf,
            "xacro_args": xacro_args,
            "publish_robot_description": False,       # robot_state_publisher does it
        }, sim_sized],
    )

    dynamics_node = Node(
        package="manip_dynamics",
        executable="dynamics_node",
        name="dynamics_node",
        output="screen",
        parameters=[{
            "urdf_file": ParameterValue(urdf, value_type=str),
            "xacro_args": xacro_args,
            "tip_link": ParameterValue(LaunchConfiguration("tip_link"), value_type=str),
        }],
    )

    controller = Node(
        package="manip_dynamics",
        executable="computed_torque_controller",
        name="computed_torque_controller",
        output="screen",
        parameters=[config, {"mode": ParameterValue(LaunchConfiguration("mode"),
                                                    value_type=str)}, ctl_sized],
    )

    robot_state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        name="robot_state_publisher",
        output="screen",
        parameters=[{"robot_description": ParameterValue(description, value_type=str)}],
    )

    return [simulator, dynamics_node, controller, robot_state_publisher]


def generate_launch_description():
    share = FindPackageShare("manip_dynamics")
    arguments = [
        DeclareLaunchArgument(
            "robot", default_value="panda",
            choices=["panda", "planar_2r", "planar_rp"],
            description="Embedded robot to simulate (the config's lists must fit it)."),
        DeclareLaunchArgument(
            "urdf_file", default_value="",
            description="Your arm's URDF or xacro file (instead of robot); '' = robot."),
        DeclareLaunchArgument(
            "xacro_args", default_value="",
            description="Arguments of a xacro urdf_file: 'name:=value name2:=value2'."),
        DeclareLaunchArgument(
            "size_from_model", default_value="true", choices=["true", "false"],
            description="With urdf_file: per-joint settings and scene from the model."),
        DeclareLaunchArgument(
            "config", default_value=PathJoinSubstitution([share, "config", "sim_demo.yaml"]),
            description="Parameter file of arm_simulator and computed_torque_controller."),
        DeclareLaunchArgument(
            "mode", default_value="computed_torque",
            choices=["off", "gravity", "computed_torque"],
            description="Controller mode at start (change later with ros2 param set)."),
        DeclareLaunchArgument(
            "tip_link", default_value="",
            description="Frame of the dynamics node's Jacobian, Lambda and markers; '' = tip."),
        DeclareLaunchArgument(
            "rviz", default_value="true", choices=["true", "false"],
            description="Start RViz with rviz/dynamics.rviz."),
        DeclareLaunchArgument(
            "fixed_frame", default_value="panda_link0",
            description="RViz fixed frame (the robot's root link: base_link for the planar "
                        "arms)."),
    ]

    rviz = Node(
        package="rviz2",
        executable="rviz2",
        name="rviz2",
        output="screen",
        condition=IfCondition(LaunchConfiguration("rviz")),
        arguments=["-d", PathJoinSubstitution([share, "rviz", "dynamics.rviz"]),
                   "-f", LaunchConfiguration("fixed_frame")],
    )

    return LaunchDescription(arguments + [OpaqueFunction(function=_nodes), rviz])
