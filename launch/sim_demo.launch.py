"""Closed-loop simulation for ROS 2 users: simulator + dynamics node + controller + RViz.

    ros2 launch manip_dynamics sim_demo.launch.py                     # Panda, tracking
    ros2 launch manip_dynamics sim_demo.launch.py mode:=gravity       # hold the pose
    ros2 launch manip_dynamics sim_demo.launch.py rviz:=false
    ros2 param set /computed_torque_controller mode off               # watch it fall

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
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare("manip_dynamics")
    robot = LaunchConfiguration("robot")
    config = LaunchConfiguration("config")
    urdf = PathJoinSubstitution([share, "urdf", [robot, ".urdf"]])

    arguments = [
        DeclareLaunchArgument(
            "robot", default_value="panda",
            choices=["panda", "planar_2r", "planar_rp"],
            description="Embedded robot to simulate (the config's lists must fit it)."),
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

    simulator = Node(
        package="manip_dynamics",
        executable="arm_simulator",
        name="arm_simulator",
        output="screen",
        parameters=[config, {
            "robot": ParameterValue(robot, value_type=str),
            "publish_robot_description": False,       # robot_state_publisher does it
        }],
    )

    dynamics_node = Node(
        package="manip_dynamics",
        executable="dynamics_node",
        name="dynamics_node",
        output="screen",
        parameters=[{
            "urdf_file": ParameterValue(urdf, value_type=str),
            "tip_link": ParameterValue(LaunchConfiguration("tip_link"), value_type=str),
        }],
    )

    controller = Node(
        package="manip_dynamics",
        executable="computed_torque_controller",
        name="computed_torque_controller",
        output="screen",
        parameters=[config, {"mode": ParameterValue(LaunchConfiguration("mode"),
                                                    value_type=str)}],
    )

    robot_state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        name="robot_state_publisher",
        output="screen",
        parameters=[{"robot_description": ParameterValue(Command(["cat ", urdf]),
                                                         value_type=str)}],
    )

    rviz = Node(
        package="rviz2",
        executable="rviz2",
        name="rviz2",
        output="screen",
        condition=IfCondition(LaunchConfiguration("rviz")),
        arguments=["-d", PathJoinSubstitution([share, "rviz", "dynamics.rviz"]),
                   "-f", LaunchConfiguration("fixed_frame")],
    )

    return LaunchDescription(arguments + [simulator, dynamics_node, controller,
                                          robot_state_publisher, rviz])
