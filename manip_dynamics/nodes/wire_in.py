"""A serialised sensor_msgs/JointState read straight from its bytes: what the dynamics node
needs of a joint state without rclpy building the Python message (the names' str, Header,
Time, four ``array.array`` and the message setters: a third of the node's main thread at
1 kHz, more than the dynamics and all outputs together).

The bytes are what a raw subscription takes (``create_subscription(..., raw=True)``): the
layout :mod:`manip_dynamics.nodes.wire` writes, read back. A 4-byte encapsulation header
``00 01 xx xx`` (CDR, little-endian; the last two bytes are options and ignored), then,
each primitive aligned to its own size counted from the end of that header::

    int32 sec, uint32 nanosec            header.stamp
    string frame_id                      uint32 length incl. the NUL, bytes, NUL
    string[] name                        uint32 count, then each string aligned to 4
    float64[] position, velocity, effort uint32 count; values aligned to 8 when count > 0

Bytes after the effort values are ignored (rmw may hand over a longer buffer). Big-endian
CDR (``00 00``) is refused with an InputError: every middleware rclpy runs on (x86-64,
arm64) writes little-endian, and a reader for a byte order no test can produce from rclpy
would be untested code. So is every other encapsulation (XCDR2, parameter lists).

Every malformed message (too short, a length or count past the end, a string without its
NUL, a name that is not UTF-8) raises :class:`~manip_dynamics.core.errors.InputError`
saying what and where (byte offsets), never IndexError / struct.error.
"""
from __future__ import annotations

import struct
from typing import Optional

import numpy as np
from std_msgs.msg import Header

from manip_dynamics.core.errors import InputError

CDR_LE = b"\x00\x01"                 # encapsulation kind: CDR, little-endian
CDR_BE = b"\x00\x00"                 # CDR, big-endian: refused (module docstring)
BASE = 4                             # alignment is counted from here
_U32 = struct.Struct("<I")
_STAMP_AND_LENGTH = struct.Struct("<iII")   # sec, nanosec, frame_id's length
_F64 = np.dtype("<f8")
_EMPTY = np.zeros(0, dtype=np.float64)
_EMPTY.flags.writeable = False


class JointStateIn:
    """The fields of one joint state as the node reads them: ``header`` (a real
    std_msgs/Header with a builtin_interfaces/Time stamp), ``name`` (tuple of str),
    ``position``, ``velocity``, ``effort`` (read-only float64 arrays (k,) viewing the
    message's bytes; empty when absent)."""

    __slots__ = ("header", "name", "position", "velocity", "effort")

    def __init__(self, header: Header, name: tuple, position: np.ndarray,
                 velocity: np.ndarray, effort: np.ndarray):
        self.header, self.name = header, name
        self.position, self.velocity, self.effort = position, velocity, effort


class JointStateReader:
    """``reader(data)`` -> :class:`JointStateIn` of serialised sensor_msgs/JointState bytes,
    or InputError. The names are decoded only when their bytes differ from the previous
    message's (the previous tuple is returned otherwise), the frame_id likewise. Not
    thread-safe: one reader per subscription callback (one call at a time)."""

    __slots__ = ("_names_bytes", "_names_raw", "_names", "_frame_bytes", "_frame_id")

    def __init__(self):
        self._names_bytes: Optional[bytes] = None   # the last name[] with its padding
        self._names_raw: list = []                   # the last names' UTF-8 bytes
        self._names: tuple = ()
        self._frame_bytes: Optional[bytes] = None
        self._frame_id = ""

    def __call__(self, data: bytes) -> JointStateIn:
        size = len(data)
        if size < BASE + _STAMP_AND_LENGTH.size:
            raise InputError(f"serialised JointState of {size} bytes: too short for the "
                             f"encapsulation header and header.stamp")
        kind = data[:2]
        if kind != CDR_LE:
            raise InputError(_encapsulation_problem(kind))
        sec, nanosec, length = _STAMP_AND_LENGTH.unpack_from(data, BASE)
        start = BASE + _STAMP_AND_LENGTH.size
        end = _string_end(data, start, length, "header.frame_id")
        raw = data[start:end]
        if raw != self._frame_bytes:
            self._frame_id = _decode(raw, "header.frame_id", start)
            self._frame_bytes = raw
        header = Header(frame_id=self._frame_id)
        stamp = header.stamp                    # (its own Time: cheaper than a second one)
        stamp.sec, stamp.nanosec = sec, nanosec
        start += length
        start += -start & 3                     # (BASE is a multiple of 4)
        end = self._read_names(data, start)
        position, end = _float64s(data, end, "position")
        velocity, end = _float64s(data, end, "velocity")
        effort, _ = _float64s(data, end, "effort")
        return JointStateIn(header, self._names, position, velocity, effort)

    def _read_names(self, data: bytes, start: int) -> int:
        """The string[] ``name`` at ``start`` (4-aligned) into ``self._names``; -> the
        offset after its last byte. Reused when the bytes equal the previous message's
        (padding included: one comparison), else when each name's bytes do (a writer may
        leave its padding bytes uninitialised, as rclpy's serialize_message does)."""
        previous = self._names_bytes
        if previous is not None and data[start:start + len(previous)] == previous:
            return start + len(previous)     # (the same bytes at a 4-aligned offset read alike)
        count = _count(data, start, 4 + 1, "name")      # each name: length and at least a NUL
        raws, starts = [], []
        at = start + 4
        for i in range(count):
            at += -at & 3
            if at + 4 > len(data):
                raise InputError(f"name[{i}]: its length at byte {at} is past the end of the "
                                 f"{len(data)}-byte message")
            (length,) = _U32.unpack_from(data, at)
            raws.append(data[at + 4:_string_end(data, at + 4, length, f"name[{i}]")])
            starts.append(at + 4)
            at += 4 + length
        if raws != self._names_raw:
            self._names = tuple(_decode(raw, f"name[{i}]", starts[i])
                                for i, raw in enumerate(raws))
            self._names_raw = raws
        self._names_bytes = data[start:at]
        return at


def _encapsulation_problem(kind: bytes) -> str:
    if kind == CDR_BE:
        return ("serialised JointState in big-endian CDR (encapsulation 00 00): not "
                "supported, only little-endian CDR (00 01)")
    return (f"serialised JointState with encapsulation {kind.hex(' ')}: not a plain CDR "
            f"message (expected 00 01: CDR, little-endian)")


def _count(data: bytes, at: int, min_size: int, field: str) -> int:
    """The uint32 count of a sequence at ``at`` (4-aligned), checked against the bytes
    left: each element takes at least ``min_size`` bytes."""
    size = len(data)
    if at + 4 > size:
        raise InputError(f"{field}: its count at byte {at} is past the end of the "
                         f"{size}-byte message")
    (count,) = _U32.unpack_from(data, at)
    if count * min_size > size - at - 4:
        raise InputError(f"{field}: {count} elements of at least {min_size} bytes do not fit "
                         f"in the {size - at - 4} bytes left (byte {at})")
    return count


def _string_end(data: bytes, start: int, length: int, field: str) -> int:
    """The end of a CDR string's text (before its NUL) whose ``length`` (NUL included;
    0 read as empty) was read just before ``start``."""
    if length == 0:
        return start
    end = start + length - 1
    if end >= len(data):
        raise InputError(f"{field}: a string of {length} bytes at byte {start} runs past "
                         f"the end of the {len(data)}-byte message")
    if data[end] != 0:
        raise InputError(f"{field}: the string at byte {start} does not end in a NUL")
    return end


def _decode(raw: bytes, field: str, at: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{field}: not UTF-8 at byte {at + exc.start} "
                         f"({raw[exc.start:exc.start + 4]!r})") from None


def _float64s(data: bytes, at: int, field: str) -> tuple[np.ndarray, int]:
    """The float64[] whose count is at ``at`` (aligned to 4 first); -> (read-only view
    of its values, the offset after them)."""
    at += -at & 3
    count = _count(data, at, 8, field)
    at += 4
    if not count:
        return _EMPTY, at
    at += -(at - BASE) & 7
    end = at + 8 * count
    if end > len(data):
        raise InputError(f"{field}: {count} float64 values at byte {at} run past the end "
                         f"of the {len(data)}-byte message")
    return np.frombuffer(data, dtype=_F64, count=count, offset=at), end
