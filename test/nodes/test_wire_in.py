"""``manip_dynamics.nodes.wire_in``: a serialised sensor_msgs/JointState read from its bytes.

The reference is the message itself: a JointState built with the generated type, serialised
by rclpy's type support (``serialize_message``); the reader must give back every field
(stamp, frame_id, names, the three arrays bit for bit, NaN and inf included), for random
messages (hypothesis: unicode names, empty and unequal arrays, stamps at their bounds),
with one reader reused across messages (its names / frame_id memo must never hand back
stale names). Malformed bytes (every truncation of real messages, corrupted lengths and
counts, random byte corruption, other encapsulations, invalid UTF-8) must raise
InputError, never another exception. No middleware traffic here: the node's raw
subscription is tested over DDS in test_dynamics_node.py.
"""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from manip_dynamics.core.errors import InputError
from manip_dynamics.nodes.wire_in import JointStateReader

# names as rclpy can carry them: any unicode but surrogates and NUL (a C string ends there)
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=12)
VALUES = st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=9)
SEC = st.one_of(st.sampled_from([-2**31, -1, 0, 1, 2**31 - 1]),
                st.integers(-2**31, 2**31 - 1))
NANOSEC = st.one_of(st.sampled_from([0, 1, 999_999_999, 2**32 - 1]),
                    st.integers(0, 2**32 - 1))
SHARED = JointStateReader()      # reused across examples: its memo sees changing messages


def joint_state(names, position, velocity, effort, sec=0, nanosec=0, frame_id=""):
    msg = JointState(name=list(names), position=list(position), velocity=list(velocity),
                     effort=list(effort))
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    msg.header.frame_id = frame_id
    return msg


def assert_same(got, msg):
    """Every field of the reader's result equals the message's (floats bit for bit)."""
    assert got.header == msg.header
    assert type(got.header.stamp).__name__ == "Time"
    assert got.name == tuple(msg.name) and type(got.name) is tuple
    for field in ("position", "velocity", "effort"):
        values = getattr(got, field)
        expected = np.array(getattr(msg, field), dtype="<f8")
        assert values.dtype == np.float64 and len(values) == len(expected), field
        assert values.tobytes() == expected.tobytes(), field
        assert not values.flags.writeable, field


@settings(max_examples=400, deadline=None)
@given(names=st.lists(TEXT, max_size=9), position=VALUES, velocity=VALUES, effort=VALUES,
       sec=SEC, nanosec=NANOSEC, frame_id=TEXT)
def test_every_field_reads_back(names, position, velocity, effort, sec, nanosec, frame_id):
    msg = joint_state(names, position, velocity, effort, sec, nanosec, frame_id)
    data = serialize_message(msg)
    assert_same(JointStateReader()(data), msg)
    first = SHARED(data)
    assert_same(first, msg)
    # the same names again with other values: the names' tuple is reused, values are new
    again = joint_state(names, [2.5] * len(position), velocity[::-1], effort + [1.0],
                        sec, nanosec, frame_id)
    second = SHARED(serialize_message(again))
    assert_same(second, again)
    assert second.name is first.name


@pytest.mark.parametrize("previous", [["j1", "j2"], ["j1"], ["j1", "j2", "j3"], ["j1", "j"],
                                      ["j1", "j2x"]])
def test_names_that_start_like_the_previous_ones_are_read_afresh(previous):
    """The memo compares the previous names' bytes: a list that extends, shortens or
    changes the last name of the previous one is still read as sent."""
    reader = JointStateReader()
    reader(serialize_message(joint_state(previous, [0.0] * len(previous), [], [])))
    msg = joint_state(["j1", "j2"], [1.0, 2.0], [3.0, 4.0], [5.0, 6.0])
    assert_same(reader(serialize_message(msg)), msg)


def test_a_deserialised_message_equals_the_read_fields():
    """Cross-check with rclpy's reader of the same bytes (7 joints, as a driver sends)."""
    msg = joint_state([f"panda_joint{i}" for i in range(1, 8)], np.linspace(-1, 1, 7),
                      np.linspace(0, 2, 7), np.linspace(-5, 5, 7), 1_700_000_000, 123,
                      "base")
    data = serialize_message(msg)
    assert_same(JointStateReader()(data), deserialize_message(data, JointState))


def _real_messages():
    return [joint_state(["a", "bé", "joint_3"], [0.1, 0.2, 0.3], [1.5, math.nan, -2.0],
                        [4.0, 5.0, 6.25], 12, 34, "base_link"),
            joint_state(["j1"], [1.0], [], [7.75], -1, 5, ""),
            joint_state([f"panda_joint{i}" for i in range(1, 8)], np.linspace(-1, 1, 7),
                        np.linspace(0, 2, 7), np.linspace(-5, 5, 7) + 0.125, 1_700_000_000,
                        999_999_999, "wörld")]


@pytest.mark.parametrize("index", range(3))
@pytest.mark.parametrize("memo", [False, True])
def test_every_truncation_is_an_input_error(index, memo):
    """Cut a real message at every length: up to the end of the last effort value each
    raises InputError (the end found independently: where the last value's 8 bytes sit);
    from there on the message reads back whole. ``memo``: the reader saw the whole
    message before (its names' memo must not read past a cut)."""
    msg = _real_messages()[index]
    data = serialize_message(msg)
    end = data.rfind(struct.pack("<d", msg.effort[-1])) + 8
    assert end > 8
    for length in range(len(data) + 1):
        reader = JointStateReader()
        if memo:
            reader(data)
        if length < end:
            with pytest.raises(InputError):
                reader(data[:length])
        else:
            assert_same(reader(data[:length]), msg)


def _corrupt(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + struct.pack("<I", value) + data[at + 4:]


def test_corrupted_lengths_and_counts_are_input_errors():
    msg = joint_state(["a", "bé", "joint_3"], [0.1, 0.2, 0.3], [1.5, 2.5, -2.0],
                      [4.0, 5.0, 6.25], 12, 34, "base_link")
    data = serialize_message(msg)
    # offsets from the layout: frame_id's length at 12, "base_link\0" (10) up to 26,
    # names' count at 28, name[0]'s length at 32: "a\0" + 2, "bé\0", "joint_3\0"
    assert data[12:16] == struct.pack("<I", 10) and data[28:32] == struct.pack("<I", 3)
    position = 32 + (4 + 4) + (4 + 4) + (4 + 8)
    assert data[position:position + 4] == struct.pack("<I", 3)
    for at, value, words in [
            (12, 2**32 - 1, "header.frame_id"), (12, 200, "header.frame_id"),
            (12, 9, "NUL"), (28, 2**32 - 1, "name: 4294967295 elements"),
            (28, 10**6, "name: 1000000 elements"),
            (32, 2**31, r"name\[0\]"), (40, 9, r"name\[1\]"),
            (position, 2**32 - 1, "position: 4294967295 elements"), (position, 20, "position"),
            (position, 4, "velocity|effort")]:     # (4 values read, then a count fails)
        with pytest.raises(InputError, match=words):
            JointStateReader()(_corrupt(data, at, value))


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, 2), at=st.integers(0, 200), byte=st.integers(0, 255))
def test_any_corrupted_byte_reads_or_is_an_input_error(index, at, byte):
    """A byte changed anywhere: the reader returns fields or raises InputError, nothing
    else (no IndexError, struct.error, UnicodeDecodeError, numpy's ValueError)."""
    data = bytearray(serialize_message(_real_messages()[index]))
    data[at % len(data)] = byte
    try:
        JointStateReader()(bytes(data))
    except InputError:
        pass


@pytest.mark.parametrize("kind,words", [(b"\x00\x00", "big-endian"),
                                        (b"\x00\x07", "not a plain CDR"),
                                        (b"\x01\x01", "not a plain CDR")])
def test_other_encapsulations_are_refused(kind, words):
    data = serialize_message(_real_messages()[0])
    with pytest.raises(InputError, match=words):
        JointStateReader()(kind + data[2:])


def test_a_name_that_is_not_utf8_is_an_input_error():
    data = serialize_message(joint_state(["ab", "cd"], [1.0, 2.0], [], []))
    at = data.find(b"cd\x00")
    with pytest.raises(InputError, match=r"name\[1\]: not UTF-8"):
        JointStateReader()(data[:at] + b"\xff\xfe" + data[at + 2:])


@pytest.mark.parametrize("data", [b"", b"\x00\x01\x00\x00", b"garbage!", bytes(15)])
def test_short_garbage_is_an_input_error(data):
    with pytest.raises(InputError):
        JointStateReader()(data)
