"""diagnostic_msgs/DiagnosticArray from ``manip_dynamics.rules.stats`` (thin rclpy adapter).

``diagnostic_array(stamp, name, hardware_id, status)`` wraps one
``rules.stats.diagnostic_status(...)`` result, ``(level, message, [(key, value), ...])``,
into the array a node publishes on ``/diagnostics`` (the ROS convention, 1 Hz).
"""
from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from std_msgs.msg import Header

from manip_dynamics.rules.stats import Level


def diagnostic_array(stamp, name: str, hardware_id: str,
                     status: tuple[Level, str, list[tuple[str, str]]]) -> DiagnosticArray:
    """One DiagnosticStatus (level byte, name, message, hardware_id, KeyValue list) in a
    DiagnosticArray stamped ``stamp`` (builtin_interfaces/Time)."""
    level, message, values = status
    return DiagnosticArray(header=Header(stamp=stamp), status=[DiagnosticStatus(
        level=bytes([int(level)]), name=name, message=message, hardware_id=hardware_id,
        values=[KeyValue(key=k, value=v) for k, v in values])])
