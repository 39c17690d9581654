"""Joint-state logs as CSV files (RTDE-style loggers, a real arm's own scripts), ROS-free.

A CSV log has one row per sample and no joint names; a :class:`ColumnMap` says which
columns hold what, in which units:

* columns are numbered from **1** (as ``awk``, ``cut``, spreadsheets and most data
  READMEs count them); ``q: 2:7`` is columns 2 to 7 inclusive, one per joint in the
  model's joint order (or the order of the map's ``joints``);
* rows are the file's **line numbers**, from 1 (as ``sed -n`` and ``awk``'s NR count
  them; a header line is line 1): the window ``rows: 635:3510`` keeps lines 635 to 3510
  inclusive, and every skipped row is reported by its line number;
* units: ``t_unit`` s | ms | us | ns; ``q_unit`` rad | deg; ``qd_unit`` rad/s | deg/s
  (deg: revolute joints); ``drive_gains`` (n,) multiply the effort columns: N m per the
  logged unit, e.g. N m/A when the logger writes motor currents. After scaling, q is rad
  (m), qd rad/s (m/s), effort N m (N), t s.

:func:`read_csv_joint_states` returns the :class:`~.recording.JointStateLog` the MCAP
reader returns, with ``skipped`` set to a :class:`RowReport`. Rows that are skipped (never
returned, so never fitted), by reason, checked in this order:

``column count``  a row whose field count is not the file's (the most common count), e.g.
                  a truncated last row;
``unparsable``    a field the map uses is not a number;
``non-finite``    nan or inf in a used field;
``absurd``        a value no arm reports: ``|x| > ABSURD`` (1e9 in SI units, ``|t|`` >
                  1e11 s) always; with limits (the URDF's), q outside [lower, upper]
                  widened by ``Q_MARGIN`` of the range on each side, ``|qd|`` above
                  ``1 + RATE_MARGIN`` times the velocity limit, ``|effort|`` above
                  ``1 + RATE_MARGIN`` times the effort limit (effort after the drive gains);
``repeated stamp``, ``stamp goes back``  t equal to or before the last KEPT row's;
``position jump``  with limits, a row whose q is further from both its neighbours (the
                  rows before and after it that passed the checks above; the first and
                  last row: their one neighbour) than the joint could move between their
                  stamps: ``|q_i - q_i'| > (1 + RATE_MARGIN) v_i |t - t'| + JUMP_FLOOR``
                  on some joint, v_i the velocity limit. An isolated row of another
                  pose (a logger's shifted fields within the limits); a real step of q (a
                  re-zeroed encoder, a wrap) agrees with the rows after it and is kept.

Map errors (:class:`ColumnMapError`, an InputError) refuse the file instead: an unknown
key, a column the file does not have, a q count that differs from the joints, no row left.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..extras import import_extra
from .recording import JointStateLog

ABSURD = 1e9          # |q|, |qd|, |effort| in SI units beyond this: absurd whatever the limits
ABSURD_T = 1e11       # |t| s (the epoch in s is 1.8e9)
Q_MARGIN = 0.1        # q may leave [lower, upper] by 10% of the range (at least 0.1) each side
RATE_MARGIN = 0.5     # |qd|, |effort| may exceed the limit by 50%
EXAMPLES = 5          # line numbers kept per reason
T_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
Q_UNITS = {"rad": 1.0, "deg": np.pi / 180, "m": 1.0}
QD_UNITS = {"rad/s": 1.0, "deg/s": np.pi / 180, "m/s": 1.0}
DELIMITERS = {"comma": ",", "semicolon": ";", "tab": "\t", "space": None, "whitespace": None}
REASONS = ("column count", "unparsable", "non-finite", "absurd", "repeated stamp",
           "stamp goes back", "position jump")
JUMP_FLOOR = 0.01     # rad (m): a position step below this is never a jump (sensor noise)


class ColumnMapError(InputError):
    """The column map does not fit the file or the model (the file is refused, not read)."""


@dataclass(frozen=True)
class ColumnMap:
    """Which 1-based columns hold t, q (n), qd (n, optional), effort (n, optional); units;
    drive gains (effort multipliers, N m per logged unit); the row window (first, last)
    line, inclusive, None = open; delimiter (None: auto among , ; tab, else whitespace);
    header (None: auto, line 1 is a header if none of its fields is a number); joints:
    names of the q columns in order (None: the model's joint order)."""

    t: int
    q: tuple
    qd: tuple | None = None
    effort: tuple | None = None
    t_unit: str = "s"
    q_unit: str = "rad"
    qd_unit: str = "rad/s"
    drive_gains: tuple | None = None
    rows: tuple | None = None
    delimiter: str | None = None
    header: bool | None = None
    joints: tuple | None = None

    @classmethod
    def from_mapping(cls, mapping, source="column map"):
        """ColumnMap from a dict (a YAML file's, or :func:`parse_inline`'s); values as in
        the YAML (columns: N, "A:B" or a list; drive_gains: list or "k1,k2"; rows "A:B")."""
        if not isinstance(mapping, dict):
            raise ColumnMapError(f"{source}: expected a mapping of keys, got {mapping!r}")
        known = [f.name for f in fields(cls)]
        unknown = [k for k in mapping if k not in known]
        if unknown:
            raise ColumnMapError(f"{source}: unknown key(s) {', '.join(map(repr, unknown))} "
                                 f"(known: {', '.join(known)})")
        if "t" not in mapping or "q" not in mapping:
            raise ColumnMapError(f"{source}: needs the columns of t and q (e.g. t=1,q=2:7)")
        m = dict(mapping)
        t = _columns(m["t"], "t", source)
        if len(t) != 1:
            raise ColumnMapError(f"{source}: t must be one column, got {m['t']!r}")
        kw = {"t": t[0], "q": _columns(m["q"], "q", source)}
        for key in ("qd", "effort"):
            kw[key] = None if m.get(key) is None else _columns(m[key], key, source)
        for key, units in (("t_unit", T_UNITS), ("q_unit", Q_UNITS), ("qd_unit", QD_UNITS)):
            if key in m:
                if m[key] not in units:
                    raise ColumnMapError(f"{source}: {key} must be one of {', '.join(units)}, "
                                         f"got {m[key]!r}")
                kw[key] = m[key]
        if m.get("drive_gains") is not None:
            kw["drive_gains"] = drive_gains(m["drive_gains"], source)
        if m.get("rows") is not None:
            kw["rows"] = row_window(m["rows"], source)
        kw["delimiter"] = _delimiter(m.get("delimiter"), source)
        if m.get("header") is not None and not isinstance(m["header"], bool):
            raise ColumnMapError(f"{source}: header must be true or false, got {m['header']!r}")
        kw["header"] = m.get("header")
        if m.get("joints") is not None:
            kw["joints"] = tuple(str(j) for j in m["joints"])
        return cls(**kw)

    def replace(self, **changes):
        """A copy with ``changes`` (e.g. drive_gains or rows from the command line)."""
        return ColumnMap(**{**{f.name: getattr(self, f.name) for f in fields(self)}, **changes})

    def used(self):
        """[(quantity, 1-based columns)] the map reads."""
        return [(k, c) for k, c in (("t", (self.t,)), ("q", self.q), ("qd", self.qd),
                                    ("effort", self.effort)) if c is not None]


@dataclass(frozen=True)
class RowReport:
    """What the CSV reader kept and skipped. ``lines``: data rows in the window (header
    excluded); ``columns``: the file's field count; ``skipped``: reason -> count;
    ``examples``: reason -> the first line numbers; ``first``: reason -> what was wrong
    with its first line; ``largest_gap``: (s, line after which) between kept rows."""

    path: str
    lines: int
    kept: int
    columns: int
    window: tuple
    skipped: dict = field(default_factory=dict)
    examples: dict = field(default_factory=dict)
    first: dict = field(default_factory=dict)
    largest_gap: tuple = (0.0, 0)

    def line(self):
        """One line: kept/read, then per reason the count, first lines and first cause."""
        head = (f"{Path(self.path).name}: lines {self.window[0]}-{self.window[1]}, "
                f"{self.lines} rows of {self.columns} columns, {self.kept} kept")
        if not self.skipped:
            return head + ", none skipped"
        parts = []
        for reason in REASONS:
            if reason in self.skipped:
                rows = ", ".join(map(str, self.examples[reason]))
                more = ", ..." if self.skipped[reason] > len(self.examples[reason]) else ""
                plural = "s" if self.skipped[reason] > 1 else ""
                parts.append(f"{self.skipped[reason]} {reason} (line{plural} {rows}{more}; "
                             f"{self.first[reason]})")
        gap = (f"; largest gap between kept rows {self.largest_gap[0]:.3g} s, after line "
               f"{self.largest_gap[1]}")
        return head + f", {sum(self.skipped.values())} skipped: " + "; ".join(parts) + gap

    def as_dict(self):
        return {"path": self.path, "window": list(self.window), "rows": self.lines,
                "kept": self.kept, "columns": self.columns, "skipped": dict(self.skipped),
                "examples": {k: list(v) for k, v in self.examples.items()},
                "first": dict(self.first),
                "largest_gap_s": self.largest_gap[0], "largest_gap_after_line": self.largest_gap[1]}


def parse_inline(text):
    """``"t=1,q=2:7,qd=8:13,effort=14:19,q_unit=deg"`` -> dict for :meth:`ColumnMap.from_mapping`
    (values without commas: columns as N or A:B; drive gains go in --drive-gains)."""
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ColumnMapError(f"--csv-map: {item!r} is not key=value (e.g. t=1,q=2:7)")
        out[key.strip()] = value.strip()
    if "header" in out:
        out["header"] = {"true": True, "false": False}.get(out["header"].lower(), out["header"])
    return out


def load_column_map(path):
    """The mapping in the YAML file ``path`` (``2:7`` read as text, not YAML 1.1's base-60
    integer 127)."""
    yaml = import_extra("yaml", "a column map file (or give it inline: --csv-map)")

    class Loader(yaml.SafeLoader):
        pass
    int_tag = "tag:yaml.org,2002:int"
    Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != int_tag]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver(int_tag, re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
    try:
        data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=Loader)
    except yaml.YAMLError as e:
        raise ColumnMapError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    return data


def drive_gains(value, source="--drive-gains"):
    """(n,) finite non-zero floats from a list or "k1,k2,..."."""
    items = value.split(",") if isinstance(value, str) else value
    try:
        k = tuple(float(x) for x in (items if isinstance(items, (list, tuple)) else [items]))
    except (TypeError, ValueError):
        raise ColumnMapError(f"{source}: drive gains must be numbers, got {value!r}") from None
    if not k or not all(np.isfinite(k)) or 0.0 in k:
        raise ColumnMapError(f"{source}: drive gains must be finite and non-zero, got {value!r}")
    return k


def row_window(value, source="--rows"):
    """(first, last) line numbers from "A:B" ("A:" or ":B" open), 1-based inclusive."""
    text = str(value)
    a, colon, b = text.partition(":")
    try:
        first, last = (int(a) if a.strip() else 1), (int(b) if b.strip() else None)
    except ValueError:
        first = None
    if not colon or first is None or first < 1 or (last is not None and last < first):
        raise ColumnMapError(f"{source}: rows must be FIRST:LAST line numbers, 1-based, "
                             f"FIRST <= LAST (e.g. 635:3510), got {value!r}")
    return first, last


def _columns(value, key, source):
    """1-based columns from N, "A:B", "A-B" or a list of N."""
    if isinstance(value, (list, tuple)):
        cols = list(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*\d+\s*[:-]\s*\d+\s*", value):
        a, b = map(int, re.split(r"[:-]", value))
        cols = list(range(a, b + 1)) if a <= b else []
    else:
        cols = [value]
    try:
        out = tuple(int(c) for c in cols if not isinstance(c, bool) and float(c) == int(c))
    except (TypeError, ValueError):
        out = ()
    if not out or len(out) != len(cols) or min(out) < 1:
        raise ColumnMapError(f"{source}: {key} must be 1-based columns (N, A:B or a list), "
                             f"got {value!r}")
    return out


def _delimiter(value, source):
    if value is None or value == "auto":
        return None
    if value in DELIMITERS:
        return DELIMITERS[value] or " "
    if isinstance(value, str) and len(value) == 1:
        return value
    raise ColumnMapError(f"{source}: delimiter must be one character, auto or one of "
                         f"{', '.join(DELIMITERS)}, got {value!r}")


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _split(lines, delimiter):
    """The delimiter (auto: the first of , ; tab in the first non-blank line, else
    whitespace) and a function splitting a line into fields."""
    if delimiter is None:
        first = next((ln for ln in lines if ln.strip()), "")
        delimiter = next((d for d in (",", ";", "\t") if d in first), " ")
    if delimiter == " ":
        return lambda ln: ln.split()
    return lambda ln: [f.strip() for f in ln.split(delimiter)]


class _Skips:
    """Per-reason counts, first line numbers and the first line's cause."""

    def __init__(self):
        self.count, self.examples, self.first = Counter(), {}, {}

    def add(self, reason, line, why):
        self.count[reason] += 1
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < EXAMPLES:
            self.examples[reason].append(int(line))
        self.first.setdefault(reason, f"line {line}: {why}")


def read_csv_joint_states(path, columns: ColumnMap, names=None, limits=None):
    """JointStateLog of the CSV log ``path`` read through ``columns``; its ``skipped``
    holds the :class:`RowReport` (see the module docstring for the rules).

    names: joint names of the q columns in order (default ``columns.joints``, else
    ``joint_1..n``); limits: None or dict of (n,) arrays ``lower``, ``upper`` (rad or m),
    ``velocity`` (rad/s), ``effort`` (N m), in ``names`` order (inf: none), e.g.
    :func:`model_limits`. ColumnMapError: a q count other than len(names), drive gains
    not one per joint, a column the file does not have, a window outside the file, no
    row left."""
    n = len(columns.q)
    names = tuple(columns.joints or names or [f"joint_{i + 1}" for i in range(n)])
    if len(names) != n:
        raise ColumnMapError(f"the column map has {n} q columns {_span(columns.q)}, the model "
                             f"{len(names)} joints ({', '.join(names)})")
    for key in ("qd", "effort"):
        cols = getattr(columns, key)
        if cols is not None and len(cols) != n:
            raise ColumnMapError(f"the column map has {len(cols)} {key} columns "
                                 f"{_span(cols)} for {n} q columns")
    if columns.drive_gains is not None and len(columns.drive_gains) != n:
        raise ColumnMapError(f"{len(columns.drive_gains)} drive gains for {n} joints")
    text_lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    split = _split(text_lines, columns.delimiter)
    start, window = _window(path, text_lines, split, columns)
    rows = [(k, split(text_lines[k - 1])) for k in range(start, window[1] + 1)
            if text_lines[k - 1].strip()]
    ncols = Counter(len(f) for _, f in rows).most_common(1)[0][0] if rows else 0
    _check_columns(path, columns, ncols, len(rows))
    skips = _Skips()
    lines, values = _parse(rows, ncols, columns, skips)
    t, q, qd, tau = _scaled(values, columns)
    ok = _plausible(lines, t, q, qd, tau, limits, names, skips)
    keep = _monotonic(lines, t, ok, skips)
    keep = _continuous(lines, t, q, keep, limits, names, skips)
    if not keep.any():
        raise ColumnMapError(f"{path}: no row left of {len(rows)} in lines "
                             f"{window[0]}-{window[1]} ({_reasons(skips)})")
    kept_t = t[keep]
    gaps = np.diff(kept_t)
    gap = (float(gaps.max()), int(lines[keep][gaps.argmax()])) if len(gaps) else (0.0, 0)
    report = RowReport(str(path), len(rows), int(keep.sum()), ncols, window,
                       dict(skips.count), {k: tuple(v) for k, v in skips.examples.items()},
                       dict(skips.first), gap)
    pick = lambda a: None if a is None else a[keep]
    start_ns = int(round(kept_t[0] * 1e9))
    return JointStateLog(kept_t - kept_t[0], names, q[keep], pick(qd), pick(tau),
                         start_ns=start_ns, skipped=report)


def _span(cols):
    return (f"({cols[0]}-{cols[-1]})" if list(cols) == list(range(cols[0], cols[-1] + 1))
            else f"({', '.join(map(str, cols))})")


def _reasons(skips):
    return ", ".join(f"{c} {r}" for r, c in skips.count.items()) or "the file has no data rows"


def _window(path, text_lines, split, columns):
    """(first data line, (first, last) line of the window): the header (auto: line 1 with
    no number among its fields) is never data."""
    header = columns.header
    if header is None:
        first = split(text_lines[0]) if text_lines else []
        header = bool(first) and not any(_is_number(f) for f in first)
    first, last = columns.rows or (1, None)
    total = len(text_lines)
    last = total if last is None else last
    if total == 0:
        raise ColumnMapError(f"{path}: an empty file")
    if first > total or last > total:
        raise ColumnMapError(f"{path}: rows {first}:{last} asked, the file has {total} lines")
    return max(first, 2 if header else 1), (first, last)


def _check_columns(path, columns, ncols, nrows):
    if nrows == 0:
        raise ColumnMapError(f"{path}: no data rows in the window")
    for key, cols in columns.used():
        if max(cols) > ncols:
            raise ColumnMapError(f"{path} has {ncols} columns, the map asks for column "
                                 f"{max(cols)} ({key}={_span(cols)[1:-1]})")


def _parse(rows, ncols, columns, skips):
    """(line numbers (M,), values (M, k) of the used columns) of the rows with ncols fields
    whose used fields are numbers."""
    used = [c - 1 for _, cols in columns.used() for c in cols]
    lines, values = [], []
    for line, fields_ in rows:
        if len(fields_) != ncols:
            skips.add("column count", line, f"{len(fields_)} fields, not {ncols}")
            continue
        try:
            values.append([float(fields_[c]) for c in used])
        except ValueError:
            bad = next(c for c in used if not _is_number(fields_[c]))
            skips.add("unparsable", line, f"column {bad + 1} is {fields_[bad][:20]!r}")
            continue
        lines.append(line)
    return np.array(lines, dtype=int), np.array(values, dtype=float).reshape(len(lines), len(used))


def _scaled(values, columns):
    """(t s, q, qd, effort N m) from the used columns' values."""
    n = len(columns.q)
    t = values[:, 0] * T_UNITS[columns.t_unit]
    q = values[:, 1:1 + n] * Q_UNITS[columns.q_unit]
    at = 1 + n
    qd = tau = None
    if columns.qd is not None:
        qd, at = values[:, at:at + n] * QD_UNITS[columns.qd_unit], at + n
    if columns.effort is not None:
        gains = np.ones(n) if columns.drive_gains is None else np.asarray(columns.drive_gains)
        tau = values[:, at:at + n] * gains
    return t, q, qd, tau


def model_limits(model, names):
    """dict of (n,) limit arrays (lower, upper, velocity, effort) of the joints ``names``
    of a RobotModel, for :func:`read_csv_joint_states`. ColumnMapError for a name the
    model lacks."""
    index = {j: i for i, j in enumerate(model.joint_names)}
    missing = [j for j in names if j not in index]
    if missing:
        raise ColumnMapError(f"the column map's joints {', '.join(map(repr, missing))} are "
                             f"not the model's ({', '.join(model.joint_names)})")
    i = [index[j] for j in names]
    return {"lower": np.asarray(model.position_lower, float)[i],
            "upper": np.asarray(model.position_upper, float)[i],
            "velocity": np.asarray(model.velocity_limits, float)[i],
            "effort": np.asarray(model.effort_limits, float)[i]}


def _bounds(limits, n):
    """(lo, hi) per quantity (n,) for q, qd, effort, widened by the margins."""
    inf = np.full(n, np.inf)
    if limits is None:
        return {"q": (-inf, inf), "qd": (-inf, inf), "effort": (-inf, inf)}
    lo, hi = np.asarray(limits["lower"], float), np.asarray(limits["upper"], float)
    with np.errstate(invalid="ignore"):
        span = hi - lo
        real = np.isfinite(span) & (span > 0)          # lower = upper = 0: no limit written
        pad = np.where(real, np.maximum(Q_MARGIN * span, 0.1), 0.0)
    out = {"q": (np.where(real, lo - pad, -np.inf), np.where(real, hi + pad, np.inf))}
    for key, lim in (("qd", "velocity"), ("effort", "effort")):
        top = np.asarray(limits[lim], float)
        top = np.where(np.isfinite(top) & (top > 0), (1.0 + RATE_MARGIN) * top, np.inf)
        out[key] = (-top, top)
    return out


def _plausible(lines, t, q, qd, tau, limits, names, skips):
    """(M,) True where every used value is finite and not absurd; skips the others."""
    ok = np.ones(len(t), bool)
    quantities = [("t", t[:, None], ABSURD_T)] + [
        (k, a, ABSURD) for k, a in (("q", q), ("qd", qd), ("effort", tau)) if a is not None]
    finite = np.all([np.isfinite(a).all(axis=1) for _, a, _ in quantities], axis=0)
    for r in np.flatnonzero(~finite):
        key, j, v = next((k, j, a[r, j]) for k, a, _ in quantities
                         for j in range(a.shape[1]) if not np.isfinite(a[r, j]))
        skips.add("non-finite", lines[r], f"{_label(key, j, names)} is {v}")
    ok &= finite
    bounds = _bounds(limits, len(names))
    with np.errstate(invalid="ignore"):
        wild = np.zeros(len(t), bool)
        for key, a, cap in quantities:
            lo, hi = bounds.get(key, (-np.inf, np.inf))
            wild |= ((np.abs(a) > cap) | (a < lo) | (a > hi)).any(axis=1)
    for r in np.flatnonzero(ok & wild):
        ok[r] = False
        skips.add("absurd", lines[r], _absurd(r, quantities, bounds, names))
    return ok


def _label(key, j, names):
    return "t" if key == "t" else f"{key}[{names[j]}]"


def _absurd(r, quantities, bounds, names):
    """The first value of row r that is absurd, as text; '' if none."""
    for key, a, cap in quantities:
        lo, hi = bounds.get(key, (np.full(a.shape[1], -np.inf), np.full(a.shape[1], np.inf)))
        for j, v in enumerate(a[r]):
            if abs(v) > cap:
                return f"{_label(key, j, names)} = {v:.3g}"
            if not lo[j] <= v <= hi[j]:
                return f"{_label(key, j, names)} = {v:.3g} outside [{lo[j]:.3g}, {hi[j]:.3g}]"
    return ""


def _monotonic(lines, t, ok, skips):
    """ok & t strictly after the last kept row's stamp; skips repeated and earlier stamps."""
    keep = ok.copy()
    last, last_line = -np.inf, 0
    for r in np.flatnonzero(ok):
        if t[r] > last:
            last, last_line = t[r], lines[r]
            continue
        keep[r] = False
        reason = "repeated stamp" if t[r] == last else "stamp goes back"
        skips.add(reason, lines[r], f"t = {t[r]:.6g} s, line {last_line} had {last:.6g} s")
    return keep


def _continuous(lines, t, q, keep, limits, names, skips):
    """keep & not a position jump (module docstring); skips the jumps. Without limits (or
    a finite velocity limit on no joint) nothing is checked."""
    if limits is None:
        return keep
    v = np.asarray(limits["velocity"], float)
    v = np.where(np.isfinite(v) & (v > 0), (1.0 + RATE_MARGIN) * v, np.inf)
    rows = np.flatnonzero(keep)
    if len(rows) < 2 or not np.isfinite(v).any():
        return keep
    step = np.abs(np.diff(q[rows], axis=0))                       # (m - 1, n)
    far = (step > v * np.diff(t[rows])[:, None] + JUMP_FLOOR).any(axis=1)
    before = np.concatenate(([True], far))     # (the first row: its one neighbour decides)
    after = np.concatenate((far, [True]))
    out = keep.copy()
    for k in np.flatnonzero(before & after):
        r = rows[k]
        j = rows[k + 1] if k + 1 < len(rows) else rows[k - 1]
        i = int(np.argmax(np.abs(q[r] - q[j]) / v))
        out[r] = False
        skips.add("position jump", lines[r], f"q[{names[i]}] = {q[r, i]:.4g}, line "
                  f"{lines[j]} has {q[j, i]:.4g} ({abs(t[r] - t[j]):.3g} s apart, velocity "
                  f"limit {v[i] / (1.0 + RATE_MARGIN):.3g})")
    return out
