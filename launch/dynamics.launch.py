"""Start manip_dynamics' dynamics_node (and, optionally, robot_state_publisher and RViz).

    ros2 launch manip_dynamics dynamics.launch.py                      # robot from the topic
    ros2 launch manip_dynamics dynamics.launch.py \\
        urdf_file:=$(ros2 pkg prefix manip_dynamics)/share/manip_dynamics/urdf/panda.urdf \\
        robot_state_publisher:=true rviz:=true fixed_frame:=panda_link0
    ros2 launch manip_dynamics dynamics.launch.py namespace:=arm1 joint_states:=/arm1/joint_states
    ros2 launch manip_dynamics dynamics.launch.py urdf_file:=arm.urdf.xacro \
        xacro_args:="prefix:=a_" gravity_command:=/effort_controller/commands

A real arm through ros2_control: ``gravity_command:=/NAME/commands`` remaps the node's
gravity torques (``~/gravity_command``, std_msgs/Float64MultiArray in ``command_joints``
order: set ``command_joints`` in ``config`` to the controller's ``joints`` list) to the
command topic of an ``effort_controllers/JointGroupEffortController`` called NAME, i.e.
the remap ``("~/gravity_command", "/NAME/commands")`` below; the arm then holds itself
against gravity.

Where the robot model comes from, first match wins: the ``robot_description`` argument
(URDF XML), the ``urdf_file`` argument, else the ``robot_description`` TOPIC (transient
local, as robot_state_publisher publishes it) in the node's namespace.

Every other parameter comes from ``config`` (default: share/manip_dynamics/config/
dynamics.yaml). Topics and services are relative / private, so with ``namespace:=ns`` the
node is ``/ns/dynamics_node`` and its markers are ``/ns/dynamics_node/inertia_markers``.
RViz (``rviz:=true``) runs in the same namespace with rviz/dynamics.rviz, whose topics are
relative for that reason.
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
    namespace = LaunchConfiguration("namespace")

    arguments = [
        DeclareLaunchArgument(
            "namespace", default_value="",
            description="Namespace of the nodes (topics/services resolve inside it)."),
        DeclareLaunchArgument(
            "config", default_value=PathJoinSubstitution([share, "config", "dynamics.yaml"]),
            description="Parameter file of dynamics_node."),
        DeclareLaunchArgument(
            "urdf_file", default_value="",
            description="URDF file of the robot; '' = use the robot_description topic."),
        DeclareLaunchArgument(
            "xacro_args", default_value="",
            description="Arguments of a xacro urdf_file: 'name:=value name2:=value2'."),
        DeclareLaunchArgument(
            "gravity_command", default_value="~/gravity_command",
            description="Topic of g(q) (Float64MultiArray), e.g. /effort_controller/commands "
                        "for a ros2_control JointGroupEffortController; default: no remap."),
        DeclareLaunchArgument(
            "robot_description", default_value="",
            description="URDF XML of the robot (overrides urdf_file); '' = not given."),
        DeclareLaunchArgument(
            "tip_link", default_value="",
            description="Frame of the Jacobian, Lambda and markers; '' = default tip."),
        DeclareLaunchArgument(
            "joint_states", default_value="joint_states",
            description="Topic the node reads sensor_msgs/JointState from."),
        DeclareLaunchArgument(
            "use_sim_time", default_value="false", choices=["true", "false"],
            description="Use /clock (simulation time)."),
        DeclareLaunchArgument(
            "robot_state_publisher", default_value="false", choices=["true", "false"],
            description="Also start robot_state_publisher with urdf_file (for TF/RViz)."),
        DeclareLaunchArgument(
            "rviz", default_value="false", choices=["true", "false"],
            description="Also start RViz with rviz/dynamics.rviz."),
        DeclareLaunchArgument(
            "fixed_frame", default_value="base_link",
            description="RViz fixed frame (the robot's root link)."),
    ]

    dynamics_node = Node(
        package="manip_dynamics",
        executable="dynamics_node",
        name="dynamics_node",
        namespace=namespace,
        output="screen",
        parameters=[
            LaunchConfiguration("config"),
            {
                "urdf_file": ParameterValue(LaunchConfiguration("urdf_file"), value_type=str),
                "xacro_args": ParameterValue(LaunchConfiguration("xacro_args"), value_type=str),
                "robot_description": ParameterValue(LaunchConfiguration("robot_description"),
                                                    value_type=str),
                "tip_link": ParameterValue(LaunchConfiguration("tip_link"), value_type=str),
                "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"),
                                               value_type=bool),
            },
        ],
        remappings=[("joint_states", LaunchConfiguration("joint_states")),
                    # ros2_control: g(q) to an effort controller's command topic
                    ("~/gravity_command", LaunchConfiguration("gravity_command"))],
    )

    robot_state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        namespace=namespace,
        output="screen",
        condition=IfCondition(LaunchConfiguration("robot_state_publisher")),
        parameters=[{
            "robot_description": ParameterValue(
                Command(["xacro ", LaunchConfiguration("urdf_file"), " ",
                         LaunchConfiguration("xacro_args")]), value_type=str),
            "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"),
                                           value_type=bool),
        }],
        remappings=[("joint_states", LaunchConfiguration("joint_states"))],
    )

    rviz = Node(
        package="rviz2",
        executable="rviz2",
        namespace=namespace,
        output="screen",
        condition=IfCondition(LaunchConfiguration("rviz")),
        arguments=["-d", PathJoinSubstitution([share, "rviz", "dynamics.rviz"]),
                   "-f", LaunchConfiguration("fixed_frame")],
        parameters=[{"use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"),
                                                    value_type=bool)}],
    )

    return LaunchDescription(arguments + [dynamics_node, robot_state_publisher, rviz])
