"""Joint-state recordings as rosbag2 MCAP files (sensor_msgs/msg/JointState, CDR), ROS-free.
(CSV logs: :mod:`.csv_log`, into the same :class:`JointStateLog`.)

The files are what ``ros2 bag record -s mcap /joint_states`` writes: MCAP with the
``ros2`` profile, one schema ``sensor_msgs/msg/JointState`` (encoding ``ros2msg``: the
.msg text with its dependencies appended, each after a line of 80 ``=`` and ``MSG:
<package>/<Name>``), a channel with message encoding ``cdr``, log times in ns. They open
in ``ros2 bag``, Foxglove and any MCAP reader. Writing and reading go through the pure
Python ``mcap`` and ``mcap-ros2-support`` wheels (their own CDR codec driven by the schema
text), so no ROS installation is needed; the tests check the bytes against rclpy's own
serialization of real sensor_msgs/JointState messages.

A recording is read from one MCAP file or from the bag directory ``ros2 bag record -s mcap``
writes (its ``metadata.yaml`` lists the files, several when the bag was split, e.g.
``--max-bag-size``); see :func:`bag_files`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..extras import import_extra

TOPIC = "/joint_states"
SCHEMA_NAME = "sensor_msgs/msg/JointState"
_SEP = "=" * 80
# sensor_msgs/msg/JointState and its dependencies, comments stripped (ROS 2 Kilted).
JOINT_STATE_MSGDEF = "\n".join([
    "std_msgs/Header header",
    "string[] name",
    "float64[] position",
    "float64[] velocity",
    "float64[] effort",
    _SEP,
    "MSG: std_msgs/Header",
    "builtin_interfaces/Time stamp",
    "string frame_id",
    _SEP,
    "MSG: builtin_interfaces/Time",
    "int32 sec",
    "uint32 nanosec",
]) + "\n"


@dataclass(frozen=True)
class JointStateLog:
    """t (N,) s since the first stamp (header stamps, integer ns subtracted first: no loss of
    precision to the epoch), names (n,), position, velocity, effort (N, n) in ``names``
    order; velocity / effort None when the messages carry none; start_ns: first stamp;
    skipped: the rows a CSV log skipped (:class:`.csv_log.RowReport`; None for MCAP)."""

    t: np.ndarray
    names: tuple
    position: np.ndarray
    velocity: np.ndarray | None
    effort: np.ndarray | None
    start_ns: int = 0
    skipped: object = None

    def in_order(self, joint_names):
        """(q, qd or None, tau or None) with columns in ``joint_names`` order; InputError
        naming the joints the log lacks."""
        index = {nm: i for i, nm in enumerate(self.names)}
        missing = [j for j in joint_names if j not in index]
        if missing:
            raise InputError(f"recording has no joints {', '.join(map(repr, missing))} "
                             f"(it has {', '.join(map(repr, self.names))})")
        cols = [index[j] for j in joint_names]
        pick = lambda a: None if a is None else a[:, cols]
        return pick(self.position), pick(self.velocity), pick(self.effort)


def write_joint_states(path, t, names, position, velocity=None, effort=None, topic=TOPIC,
                       frame_id=""):
    """Write N JointState messages to a rosbag2 MCAP file at ``path``.

    t (N,) s since the epoch (header.stamp and log time, rounded to ns); names (n,); position, velocity,
    effort (N, n) (velocity / effort None: empty arrays in the messages)."""
    Writer = import_extra("mcap_ros2.writer", __name__).Writer

    t = np.asarray(t, dtype=float)
    arrays = [None if a is None else np.asarray(a, dtype=float)
              for a in (position, velocity, effort)]
    for label, a in zip(("position", "velocity", "effort"), arrays):
        if a is not None and a.shape != (len(t), len(names)):
            raise InputError(f"{label} must have shape ({len(t)}, {len(names)}), got {a.shape}")
    ns = np.round(t * 1e9).astype(np.int64)
    with open(path, "wb") as f:
        writer = Writer(f)
        schema = writer.register_msgdef(SCHEMA_NAME, JOINT_STATE_MSGDEF)
        for k in range(len(t)):
            sec, nanosec = divmod(int(ns[k]), 1_000_000_000)
            msg = {"header": {"stamp": {"sec": sec, "nanosec": nanosec}, "frame_id": frame_id},
                   "name": list(names)}
            for label, a in zip(("position", "velocity", "effort"), arrays):
                msg[label] = [] if a is None else a[k].tolist()
            writer.write_message(topic, schema, msg, log_time=int(ns[k]),
                                 publish_time=int(ns[k]), sequence=k)
        writer.finish()


def bag_files(path) -> list:
    """The MCAP files of a recording, in recording order, as Paths.

    ``path``: an MCAP file (itself); a rosbag2 bag directory or its ``metadata.yaml``:
    the files the metadata lists (``relative_file_paths``), or every ``*.mcap`` in the
    directory in split order (``bag_9`` before ``bag_10``) when it has no metadata or
    PyYAML (which comes with ROS 2) is not installed. InputError for a bag in another
    storage (``storage_identifier`` not mcap), files compressed whole
    (``compression_mode: FILE``), a listed file that is missing, or no MCAP file at all."""
    p = Path(path)
    if p.name == "metadata.yaml":
        p = p.parent
    if not p.is_dir():
        return [p]
    meta = p / "metadata.yaml"
    try:
        import yaml                 # (PyYAML: with ROS 2; else the files in name order)
    except ImportError:
        yaml = None
    if not meta.is_file() or yaml is None:
        files = sorted(p.glob("*.mcap"), key=_split_index)
    else:
        info = (yaml.safe_load(meta.read_text(encoding="utf-8")) or {}).get(
            "rosbag2_bagfile_information") or {}
        storage = info.get("storage_identifier", "mcap")
        if storage != "mcap":
            raise InputError(f"{p}: a rosbag2 bag stored as {storage!r}; only MCAP is read "
                             "(record with ros2 bag record -s mcap, or ros2 bag convert it)")
        if str(info.get("compression_mode", "")).upper() == "FILE":
            raise InputError(f"{p}: its files are compressed whole "
                             f"({info.get('compression_format')}); decompress them first")
        files = [p / Path(f).name if not (p / f).is_file() else p / f
                 for f in info.get("relative_file_paths") or []]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise InputError(f"{meta} lists {', '.join(missing)}, which do not exist")
    if not files:
        raise InputError(f"{p}: a directory with no .mcap file (expected the bag directory "
                         "ros2 bag record -s mcap writes, or an MCAP file)")
    return files


def _split_index(path: Path):
    """Sort key of rosbag2's split files: ``bag_10.mcap`` after ``bag_9.mcap``."""
    stem, _, index = path.stem.rpartition("_")
    return (stem, int(index)) if index.isdigit() else (path.stem, -1)


def read_joint_states(path, topic=TOPIC):
    """JointStateLog of every sensor_msgs/JointState on ``topic`` in the recording ``path``:
    an MCAP file or a rosbag2 bag directory (:func:`bag_files`; its files read in turn),
    in log-time order. Joint order from the first message; later messages may order their
    names differently (mapped by name) but must carry the same set. t from header.stamp
    (the log time where the stamp is zero)."""
    rows, first = [], {}
    for file in bag_files(path):
        rows += _read_file(file, topic, first)
    if not rows:
        raise InputError(f"{path}: no sensor_msgs/JointState messages on topic {topic}")
    rows.sort(key=lambda r: r[0])                  # log time, stable: across split files
    names = first["names"]
    ns = np.array([r[1] for r in rows], dtype=np.int64)
    cols = []
    for i, fld in enumerate(("position", "velocity", "effort"), start=2):
        present = [r[i] is not None for r in rows]
        if fld == "position" and not all(present):
            raise InputError(f"{path}: message {present.index(False)} has no positions")
        cols.append(np.array([r[i] for r in rows]) if all(present) else None)
    return JointStateLog(1e-9 * (ns - ns[0]), names, *cols, start_ns=int(ns[0]))


def _read_file(path, topic, first: dict) -> list:
    """Rows (log time ns, stamp ns, position, velocity, effort) of one MCAP file, in the
    joint order of the recording's first message (``first``: its names and index, set by
    the first file that has one)."""
    make_reader = import_extra("mcap.reader", __name__).make_reader
    DecoderFactory = import_extra("mcap_ros2.decoder", __name__).DecoderFactory

    rows = []
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for k, (schema, _, message, msg) in enumerate(
                reader.iter_decoded_messages(topics=[topic], log_time_order=True)):
            if schema is None or schema.name != SCHEMA_NAME:
                raise InputError(f"{path}: topic {topic} carries "
                                 f"{getattr(schema, 'name', None)!r}, not {SCHEMA_NAME}")
            if not first:
                first["names"] = tuple(msg.name)
                first["index"] = {nm: i for i, nm in enumerate(first["names"])}
            names = first["names"]
            order = _order(msg.name, names, first["index"], k)
            stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            rows.append((message.log_time, stamp if stamp > 0 else message.log_time,
                         *(_field(getattr(msg, fld), order, k, fld, len(names))
                           for fld in ("position", "velocity", "effort"))))
    return rows


def _order(msg_names, names, index, k):
    if tuple(msg_names) == names:
        return None
    if sorted(msg_names) != sorted(names):
        raise InputError(f"message {k} names {list(msg_names)} differ from the first "
                         f"message's {list(names)}")
    return [list(msg_names).index(nm) for nm in names]


def _field(values, order, k, fld, n):
    """(n,) array in the first message's order, None if the message leaves it empty."""
    if len(values) == 0:
        return None
    if len(values) != n:
        raise InputError(f"message {k}: {len(values)} {fld} values for {n} joint names")
    a = np.asarray(values, dtype=float)
    return a if order is None else a[order]


class SerializedJointStateWriter:
    """An MCAP file (rosbag2's ``ros2`` profile) taking already CDR-serialized
    sensor_msgs/JointState messages, as an rclpy subscription with ``raw=True`` hands them
    over: the bytes are written unchanged, as rosbag2 records them. ``write(data, log_time_ns)``;
    ``close()`` writes the summary (a file that was never closed lacks it, but its messages
    still read in order)."""

    def __init__(self, path, topic=TOPIC):
        well_known = import_extra("mcap.well_known", __name__)
        MessageEncoding, SchemaEncoding = well_known.MessageEncoding, well_known.SchemaEncoding
        mcap_writer = import_extra("mcap.writer", __name__)
        CompressionType, Writer = mcap_writer.CompressionType, mcap_writer.Writer

        self.path, self.topic, self.count = str(path), topic, 0
        self._file = open(self.path, "wb")
        try:
            self._writer = Writer(self._file, compression=CompressionType.ZSTD)
            self._writer.start(profile="ros2", library="manip_dynamics recorder")
            schema = self._writer.register_schema(SCHEMA_NAME, SchemaEncoding.ROS2,
                                                  JOINT_STATE_MSGDEF.encode())
            self._channel = self._writer.register_channel(topic, MessageEncoding.CDR, schema)
        except Exception:
            self._file.close()
            raise

    def write(self, data: bytes, log_time_ns: int) -> None:
        self._writer.add_message(self._channel, log_time=int(log_time_ns), data=bytes(data),
                                 publish_time=int(log_time_ns), sequence=self.count)
        self.count += 1

    def close(self) -> None:
        if not self._file.closed:
            try:
                self._writer.finish()
            finally:
                self._file.close()
