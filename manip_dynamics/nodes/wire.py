"""Serialised messages of a fixed shape, rewritten in place: the node's per-state outputs
without building a Python message and serialising it for every state.

A ROS 2 serialised message ("cdr", what ``rclpy.serialization.serialize_message`` returns
and ``Publisher.publish`` accepts as ``bytes``) is a 4-byte encapsulation header
(``00 01 00 00``: CDR, little-endian) and the fields in declaration order, each primitive
aligned to its own size counted from the end of that header (XCDR1): ``uint32`` / ``int32``
to 4, ``float64`` to 8; a string is a ``uint32`` length including the terminating NUL, the
bytes and the NUL; a sequence a ``uint32`` count and its elements (no alignment when it is
empty). A JointState of the model's joints, or a Dynamics message, keeps its shape from one
state to the next (names, frame ids, lengths): only the stamp and the float64 values
change. :class:`CdrWriter` lays such a message out once and records where those values
are; the float64 arrays are then numpy views into the bytes, written per state, and
``bytes(buffer)`` is what is published (the per-state cost: a few array copies and one
``publish_raw``, against ~15-30 us of message setters and serialisation per output).

Padding bytes are zero. The layout is checked against rclpy's own (de)serialisation once
per template (``matches``): a middleware whose serialised form differed would make the
caller fall back to publishing messages.
"""
from __future__ import annotations

import struct
from typing import Sequence

import numpy as np

ENCAPSULATION = b"\x00\x01\x00\x00"       # CDR, little-endian, no options
_U32 = struct.Struct("<I")
STAMP = struct.Struct("<iI")               # builtin_interfaces/Time: int32 sec, uint32 nanosec
# where header.stamp sits in a message whose first field is a std_msgs/Header
HEADER_STAMP_OFFSET = len(ENCAPSULATION)
_F64 = np.dtype("<f8")


class CdrWriter:
    """Appends fields to a serialised message; the methods that return an int return the
    byte offset of the value they laid out (to rewrite it later)."""

    def __init__(self):
        self.buf = bytearray(ENCAPSULATION)

    def _align(self, size: int) -> None:
        self.buf += bytes(-(len(self.buf) - len(ENCAPSULATION)) % size)

    def uint32(self, value: int) -> int:
        self._align(4)
        offset = len(self.buf)
        self.buf += _U32.pack(value)
        return offset

    def stamp(self) -> int:
        """builtin_interfaces/Time, zero; -> its offset (for :func:`write_stamp`)."""
        self._align(4)
        offset = len(self.buf)
        self.buf += STAMP.pack(0, 0)
        return offset

    def string(self, text: str) -> None:
        data = text.encode("utf-8")
        self.uint32(len(data) + 1)
        self.buf += data + b"\x00"

    def strings(self, items: Sequence[str]) -> None:
        self.uint32(len(items))
        for item in items:
            self.string(item)

    def header_and_names(self, frame_id: str, names: Sequence[str]) -> int:
        """std_msgs/Header (zero stamp, ``frame_id``) then a string[] of ``names``, the
        start of JointState and Dynamics; -> the stamp's offset."""
        offset = self.stamp()
        self.string(frame_id)
        self.strings(names)
        return offset

    def float64s(self, count: int) -> int:
        """A float64[] of ``count`` zeros; -> the offset of its first value."""
        self.uint32(count)
        if count:
            self._align(8)
        offset = len(self.buf)
        self.buf += bytes(8 * count)
        return offset

    def float64(self) -> int:
        self._align(8)
        offset = len(self.buf)
        self.buf += bytes(8)
        return offset

    def boolean(self) -> int:
        offset = len(self.buf)
        self.buf += b"\x00"
        return offset

    def view(self, offset: int, count: int) -> np.ndarray:
        """A writable float64 view of ``count`` values at ``offset`` of the buffer (the
        buffer's size is fixed from then on)."""
        return np.frombuffer(self.buf, dtype=_F64, count=count, offset=offset)


def write_stamp(buf: bytearray, offset: int, stamp) -> None:
    """Write a builtin_interfaces/Time (``stamp.sec``, ``stamp.nanosec``) at ``offset``."""
    STAMP.pack_into(buf, offset, stamp.sec, stamp.nanosec)


def matches(data: bytes, expected) -> bool:
    """True if ``data`` deserialises (rclpy, the middleware's type support) to a message
    equal to ``expected`` in every field."""
    from rclpy.serialization import deserialize_message
    try:
        return deserialize_message(data, type(expected)) == expected
    except Exception:  # noqa: BLE001 - any failure to read it back means: do not use it
        return False


class JointStateWire:
    """sensor_msgs/JointState: header (stamp, ``frame_id``), ``names``, position and
    effort of ``n`` values, velocity of ``n`` values or none (``with_velocity``)."""

    __slots__ = ("buf", "_stamp", "position", "velocity", "effort")

    def __init__(self, names: Sequence[str], frame_id: str, with_velocity: bool):
        n = len(names)
        w = CdrWriter()
        self._stamp = w.header_and_names(frame_id, names)
        position = w.float64s(n)
        velocity = w.float64s(n if with_velocity else 0)
        effort = w.float64s(n)
        self.buf = w.buf
        self.position, self.effort = w.view(position, n), w.view(effort, n)
        self.velocity = w.view(velocity, n) if with_velocity else None

    def fill(self, stamp, q, qd, effort) -> bytes:
        """The message's bytes with this stamp and these values (``qd`` None or ignored
        when the template has no velocity)."""
        write_stamp(self.buf, self._stamp, stamp)
        self.position[:] = q
        if self.velocity is not None:
            self.velocity[:] = qd
        self.effort[:] = effort
        return bytes(self.buf)


class Float64ArrayWire:
    """std_msgs/Float64MultiArray with an empty layout and ``m`` data values."""

    __slots__ = ("buf", "data")

    def __init__(self, m: int):
        w = CdrWriter()
        w.uint32(0)             # layout.dim: empty
        w.uint32(0)             # layout.data_offset
        data = w.float64s(m)
        self.buf = w.buf
        self.data = w.view(data, m)

    def fill(self, values) -> bytes:
        self.data[:] = values
        return bytes(self.buf)


class DynamicsWire:
    """manip_dynamics_interfaces/Dynamics for ``n`` joints and a 6-row Jacobian: header
    (stamp, ``frame_id``), joint names, q, qd, g, c, M, ``tip_frame``, J, Lambda, A,
    condition number, near_singular."""

    __slots__ = ("buf", "_stamp", "_cond", "_singular", "position", "velocity", "gravity",
                 "coriolis", "mass_matrix", "jacobian", "effective_inertia",
                 "inverse_effective_inertia")

    def __init__(self, names: Sequence[str], frame_id: str, tip_frame: str):
        n = len(names)
        w = CdrWriter()
        self._stamp = w.header_and_names(frame_id, names)
        vectors = [w.float64s(n) for _ in range(4)]
        mass_matrix = w.float64s(n * n)
        w.string(tip_frame)
        jacobian = w.float64s(6 * n)
        lam, inv = w.float64s(36), w.float64s(36)
        self._cond = w.float64()
        self._singular = w.boolean()
        self.buf = w.buf
        self.position, self.velocity, self.gravity, self.coriolis = (
            w.view(offset, n) for offset in vectors)
        self.mass_matrix = w.view(mass_matrix, n * n).reshape(n, n)
        self.jacobian = w.view(jacobian, 6 * n).reshape(6, n)
        self.effective_inertia = w.view(lam, 36).reshape(6, 6)
        self.inverse_effective_inertia = w.view(inv, 36).reshape(6, 6)

    def fill(self, stamp, q, qd, g, terms, condition_number: float,
             near_singular: bool) -> bytes:
        """The message's bytes for one state (``terms``: the core's DynamicsTerms)."""
        write_stamp(self.buf, self._stamp, stamp)
        self.position[:] = q
        self.velocity[:] = qd
        self.gravity[:] = g
        self.coriolis[:] = terms.c
        self.mass_matrix[:] = terms.M
        self.jacobian[:] = terms.J
        self.effective_inertia[:] = terms.Lambda
        self.inverse_effective_inertia[:] = terms.A
        struct.pack_into("<d", self.buf, self._cond, condition_number)
        self.buf[self._singular] = 1 if near_singular else 0
        return bytes(self.buf)


class WrenchStampedWire:
    """geometry_msgs/WrenchStamped: header (stamp, ``frame_id``), wrench.force (x, y, z)
    and wrench.torque (x, y, z): six float64 values, ``wrench`` = [f; m]."""

    __slots__ = ("buf", "_stamp", "wrench")

    def __init__(self, frame_id: str):
        w = CdrWriter()
        self._stamp = w.stamp()
        w.string(frame_id)
        offsets = [w.float64() for _ in range(6)]
        self.buf = w.buf
        self.wrench = w.view(offsets[0], 6)

    def fill(self, stamp, F) -> bytes:
        """The message's bytes with this stamp and F (6,) = [force; torque]."""
        write_stamp(self.buf, self._stamp, stamp)
        self.wrench[:] = F
        return bytes(self.buf)


class ContactWire:
    """manip_dynamics_interfaces/Contact with fixed strings: header (stamp, ``frame_id``),
    in_contact, ``isolated_link``, ``isolated_joint``, residual_norm, detection_time,
    contact_point_valid, contact_point (x, y, z), contact_force (x, y, z), ``joint_names``,
    external_torques (one float64 per joint name), ``wrench_frame``, external_wrench
    (force x, y, z, torque x, y, z), ``candidate_links``. One layout per isolated joint
    (its candidate links), joint names and wrench frame (the node keeps one per isolated
    joint of its model and tip frame)."""

    __slots__ = ("buf", "_stamp", "_in_contact", "_valid", "_norm_time", "point_force",
                 "external_torques", "external_wrench")

    def __init__(self, frame_id: str, isolated_link: str, isolated_joint: str,
                 joint_names: Sequence[str], wrench_frame: str,
                 candidate_links: Sequence[str] = ()):
        w = CdrWriter()
        self._stamp = w.stamp()
        w.string(frame_id)
        self._in_contact = w.boolean()
        w.string(isolated_link)
        w.string(isolated_joint)
        norm = w.float64()
        w.float64()                              # detection_time, right after
        self._valid = w.boolean()
        point = w.float64()
        for _ in range(5):                       # the rest of contact_point, contact_force
            w.float64()
        w.strings(joint_names)
        n = len(joint_names)
        torques = w.float64s(n)
        w.string(wrench_frame)
        wrench = w.float64()
        for _ in range(5):                       # force y, z, torque x, y, z, right after
            w.float64()
        w.strings(candidate_links)
        self.buf = w.buf
        self._norm_time = w.view(norm, 2)
        self.point_force = w.view(point, 6)
        self.external_torques = w.view(torques, n)
        self.external_wrench = w.view(wrench, 6)

    def fill(self, stamp, in_contact: bool, residual_norm: float, detection_time: float,
             point, force, r, F) -> bytes:
        """The message's bytes; point and force (3,) each, or None (not valid: zeros);
        r (n,) the external joint torques r - bias, F (6,) the wrench [f; m]."""
        write_stamp(self.buf, self._stamp, stamp)
        self.buf[self._in_contact] = 1 if in_contact else 0
        self._norm_time[0] = residual_norm
        self._norm_time[1] = detection_time
        if point is None:
            self.buf[self._valid] = 0
            self.point_force[:] = 0.0
        else:
            self.buf[self._valid] = 1
            self.point_force[:3] = point
            self.point_force[3:] = force
        self.external_torques[:] = r
        self.external_wrench[:] = F
        return bytes(self.buf)


class CollisionSafetyWire:
    """manip_dynamics_interfaces/CollisionSafety of fixed points: header (stamp,
    ``frame_id``), ``body_region``, ``contact_area``, one SafetyPoint per (``links[i]``,
    ``labels[i]``), worst, speed_scale, ``simplified_robot_mass``,
    ``simplified_permissible_speed`` (the last two and contact_area fixed per layout).

    A SafetyPoint's float64 fields (position x, y, z, speed, direction x, y, z,
    effective_mass, permissible_speed, ratio) follow each other without padding, each
    point's after its two strings: ``fill`` writes the rows of a (P, 10) table (the
    columns of :mod:`manip_dynamics.safety.kernel`) into them with one indexed copy, through
    a float64 view of the whole message from the end of the encapsulation header (every
    float64 sits at a multiple of 8 from there)."""

    __slots__ = ("buf", "_stamp", "_worst", "_f64", "_rows", "_scale")

    def __init__(self, frame_id: str, body_region: str, contact_area: float,
                 links: Sequence[str], labels: Sequence[str], simplified_robot_mass: float,
                 simplified_permissible_speed: float):
        w = CdrWriter()
        self._stamp = w.stamp()
        w.string(frame_id)
        w.string(body_region)
        area = w.float64()
        starts = []
        w.uint32(len(links))
        for link, label in zip(links, labels):
            w.string(link)
            w.string(label)
            starts.append(w.float64())
            for _ in range(9):
                w.float64()
        self._worst = w.uint32(0)
        scale, mass, speed = w.float64(), w.float64(), w.float64()
        self.buf = w.buf
        base = len(ENCAPSULATION)
        self._f64 = np.frombuffer(self.buf, dtype=_F64, offset=base,
                                  count=(len(self.buf) - base) // 8)
        first = (np.array(starts, dtype=np.intp) - base) // 8
        self._rows = first[:, None] + np.arange(10, dtype=np.intp)     # (P, 10)
        self._scale = (scale - base) // 8
        for offset, value in ((area, contact_area), (mass, simplified_robot_mass),
                              (speed, simplified_permissible_speed)):
            self._f64[(offset - base) // 8] = value

    def fill(self, stamp, table, worst: int, speed_scale: float) -> bytes:
        """The message's bytes for one state: ``table`` (P, 10), the worst point's index and
        the speed scale."""
        write_stamp(self.buf, self._stamp, stamp)
        self._f64[self._rows] = table
        _U32.pack_into(self.buf, self._worst, worst)
        self._f64[self._scale] = speed_scale
        return bytes(self.buf)


class Float64Wire:
    """std_msgs/Float64: one float64 right after the encapsulation header."""

    __slots__ = ("buf",)

    def __init__(self):
        self.buf = bytearray(ENCAPSULATION + bytes(8))

    def fill(self, value: float) -> bytes:
        struct.pack_into("<d", self.buf, len(ENCAPSULATION), value)
        return bytes(self.buf)
