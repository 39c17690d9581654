"""CSV joint-state logs (manip_dynamics.core.identification.csv_log).

Synthetic files are checked against what they were built from (and against the MCAP
reader on the same samples); the real UR10e logs (shared/data/ur10e-mamedov2020, outside
the repository: skipped when absent) against rows labelled with awk and Python's csv
module, independently of the reader (how each label was found is written beside it).
"""
from __future__ import annotations

import csv

import numpy as np
import pytest

from shared_data import require_shared_data
from manip_dynamics import InputError, RobotModel
from manip_dynamics.core.identification import csv_log as C
from manip_dynamics.core.identification.recording import read_joint_states, write_joint_states

UR10E = "ur10e-mamedov2020"
GAINS = (10.0, 10.6956, 8.4566, 9.0029, 9.4800, 10.1232)     # the authors' drive gains, N m/A
UR_MAP = C.ColumnMap.from_mapping(C.parse_inline("t=1,q=2:7,qd=8:13,effort=14:19")).replace(
    drive_gains=GAINS)
NAMES = ("j1", "j2", "j3")


def _samples(N=50, seed=1):
    rng = np.random.default_rng(seed)
    t = 1_700_000_000.0 + 0.01 * np.arange(N)
    return t, rng.uniform(-1, 1, (N, 3)), rng.uniform(-1, 1, (N, 3)), rng.uniform(-5, 5, (N, 3))


def _ur(data, name):
    model = RobotModel.from_urdf_file(data / "ur10e.urdf")
    return C.read_csv_joint_states(data / "identification_data" / name, UR_MAP,
                                   model.joint_names, C.model_limits(model, model.joint_names))


def test_a_csv_log_reads_as_the_mcap_recording_of_the_same_samples(tmp_path):
    """A logger's own units and layout (header, ';', ms stamps, degrees, currents in A with
    drive gains, an extra column, effort before q) read back into the JointStateLog the
    MCAP reader gives for the same samples in SI units."""
    t, q, qd, tau = _samples()
    gains = np.array([2.0, 0.5, 4.0])
    with open(tmp_path / "log.csv", "w") as f:
        f.write("stamp_ms;i1;i2;i3;junk;q1;q2;q3;qd1;qd2;qd3\n")
        for k in range(len(t)):
            row = [f"{t[k] * 1e3:.3f}", *map(repr, (tau[k] / gains).tolist()), "x",
                   *map(repr, np.degrees(q[k]).tolist()), *map(repr, np.degrees(qd[k]).tolist())]
            f.write(";".join(row) + "\n")
    columns = C.ColumnMap.from_mapping({"t": 1, "effort": "2:4", "q": [6, 7, 8], "qd": "9-11",
                                        "t_unit": "ms", "q_unit": "deg", "qd_unit": "deg/s",
                                        "drive_gains": gains.tolist()})
    log = C.read_csv_joint_states(tmp_path / "log.csv", columns, NAMES)
    write_joint_states(tmp_path / "log.mcap", t, NAMES, q, qd, tau)
    ref = read_joint_states(tmp_path / "log.mcap")
    assert log.names == ref.names and abs(log.start_ns - ref.start_ns) <= 1000  # 1 us: %.3f ms
    assert np.abs(log.t - ref.t).max() < 2e-6
    for a, b in ((log.position, ref.position), (log.velocity, ref.velocity),
                 (log.effort, ref.effort)):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12)
    assert log.skipped.kept == len(t) and log.skipped.skipped == {}
    assert "none skipped" in log.skipped.line()


def _bad_file(path):
    """11 lines (t, q1..q3, e1..e3), each bad one built for one reason; limits below."""
    good = lambda t: f"{t},0.1,0.2,0.3,1,2,3"
    lines = [good(0.00), good(0.01),
             "0.02,0.1,0.2",                       # 3: column count
             "0.03,0.1,abc,0.3,1,2,3",             # 4: unparsable
             "0.04,0.1,nan,0.3,1,2,3",             # 5: non-finite
             "0.05,0.1,0.2,0.3,1,2,1e300",         # 6: absurd (always)
             "0.06,0.1,0.2,9.0,1,2,3",             # 7: absurd (q3 beyond 3.2 + 0.64)
             "0.07,0.1,0.2,0.3,1,200,3",           # 8: absurd (|e2| > 1.5 x 100)
             good(0.01),                           # 9: repeated stamp (line 2, the last kept)
             good(0.005),                          # 10: stamp goes back
             good(0.08)]
    path.write_text("\n".join(lines) + "\n")
    return {"lower": np.full(3, -3.2), "upper": np.full(3, 3.2), "velocity": np.full(3, 1.0),
            "effort": np.full(3, 100.0)}


def test_each_bad_row_is_skipped_and_reported_with_its_line(tmp_path):
    limits = _bad_file(tmp_path / "bad.csv")
    columns = C.ColumnMap.from_mapping({"t": 1, "q": "2:4", "effort": "5:7"})
    log = C.read_csv_joint_states(tmp_path / "bad.csv", columns, NAMES, limits)
    r = log.skipped
    assert r.skipped == {"column count": 1, "unparsable": 1, "non-finite": 1, "absurd": 3,
                         "stamp goes back": 1, "repeated stamp": 1}
    assert r.examples == {"column count": (3,), "unparsable": (4,), "non-finite": (5,),
                          "absurd": (6, 7, 8), "repeated stamp": (9,), "stamp goes back": (10,)}
    # the rows kept are exactly the good ones: lines 1, 2 and 11 (t 0, 0.01, 0.08)
    assert np.allclose(log.t, [0.0, 0.01, 0.08]) and r.kept == 3 and r.lines == 11
    assert np.array_equal(log.effort, [[1, 2, 3]] * 3)
    text = r.line()
    assert "\n" not in text and "8 skipped" in text
    for words in ("1 column count (line 3; line 3: 3 fields, not 7)",
                  "column 3 is 'abc'", "q[j2] is nan", "effort[j3] = 1e+300",
                  "1 repeated stamp (line 9", "1 stamp goes back (line 10"):
        assert words in text, (words, text)
    # without limits, lines 7 and 8 are plausible: only the 1e300 row is absurd
    log = C.read_csv_joint_states(tmp_path / "bad.csv", columns, NAMES)
    assert log.skipped.examples["absurd"] == (6,)


@pytest.mark.parametrize("mapping, words", [
    ({"t": 1, "q": "2:4", "effort": [5, 6, 9]}, "has 7 columns, the map asks for column 9 (effort=5, 6, 9)"),
    ({"t": 1, "q": "2:3"}, "the column map has 2 q columns (2-3), the model 3 joints"),
    ({"t": 1, "q": "2:4", "qd": "5:6"}, "2 qd columns (5-6) for 3 q columns"),
    ({"t": 1, "q": "2:4", "effort": "5:7", "drive_gains": [1, 2]}, "2 drive gains for 3 joints"),
    ({"t": 1, "q": "2:4", "effrot": "5:7"}, "unknown key(s) 'effrot'"),
    ({"t": 1, "q": "0:2"}, "q must be 1-based columns"),
    ({"t": "1:2", "q": "3:5"}, "t must be one column"),
    ({"q": "2:4"}, "needs the columns of t and q"),
    ({"t": 1, "q": "2:4", "q_unit": "grad"}, "q_unit must be one of rad, deg, m"),
    ({"t": 1, "q": "2:4", "rows": "5:3"}, "rows must be FIRST:LAST"),
    ({"t": 1, "q": "2:4", "rows": "3:40"}, "rows 3:40 asked, the file has 11 lines"),
    ({"t": 1, "q": "2:4", "drive_gains": "1,0,2"}, "drive gains must be finite and non-zero"),
])
def test_a_map_that_does_not_fit_is_refused_in_one_line(tmp_path, mapping, words):
    _bad_file(tmp_path / "bad.csv")
    with pytest.raises(C.ColumnMapError) as e:
        C.read_csv_joint_states(tmp_path / "bad.csv", C.ColumnMap.from_mapping(mapping), NAMES)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, InputError)


def test_no_row_left_and_inline_maps(tmp_path):
    (tmp_path / "nan.csv").write_text("0,nan,1\n1,2,inf\n")
    with pytest.raises(C.ColumnMapError, match="no row left of 2 in lines 1-2 .2 non-finite."):
        C.read_csv_joint_states(tmp_path / "nan.csv", C.ColumnMap(t=1, q=(2, 3)), NAMES[:2])
    assert C.parse_inline(" t=1, q=2:7 ,header=true") == {"t": "1", "q": "2:7", "header": True}
    with pytest.raises(C.ColumnMapError, match="'q2:7' is not key=value"):
        C.parse_inline("t=1,q2:7")
    # tab-separated with a header, whitespace-separated without
    (tmp_path / "a.tsv").write_text("time\tp1\tp2\n0\t1\t2\n1\t3\t4\n")
    (tmp_path / "b.txt").write_text("0  1 2\n1 3   4\n")
    for name in ("a.tsv", "b.txt"):
        log = C.read_csv_joint_states(tmp_path / name, C.ColumnMap(t=1, q=(2, 3)), NAMES[:2])
        assert np.array_equal(log.position, [[1, 2], [3, 4]]) and log.velocity is None


def test_an_isolated_row_of_another_pose_is_a_position_jump_a_step_is_not(tmp_path):
    """q of joint 1 at 0.5 rad, 10 ms apart, velocity limit 2 rad/s: a move of at most
    (1 + RATE_MARGIN) 2 x 0.01 + JUMP_FLOOR = 0.04 rad between rows. Line 4 reads 1.5 (1 rad
    from both neighbours): skipped as a position jump; line 8 on reads 0.9 (a real step,
    its successors agree): kept; a step of 0.039 rad is within the bound. Without limits,
    nothing is a jump."""
    q = [0.5, 0.5, 0.5, 1.5, 0.5, 0.5, 0.5, 0.9, 0.9, 0.9, 0.939]
    (tmp_path / "log.csv").write_text("".join(f"{0.01 * k:.2f},{v}\n" for k, v in enumerate(q)))
    limits = {"lower": np.array([-3.0]), "upper": np.array([3.0]),
              "velocity": np.array([2.0]), "effort": np.array([np.inf])}
    columns = C.ColumnMap(t=1, q=(2,))
    log = C.read_csv_joint_states(tmp_path / "log.csv", columns, ("j1",), limits)
    assert log.skipped.skipped == {"position jump": 1}
    assert log.skipped.examples == {"position jump": (4,)}
    assert "line 4: q[j1] = 1.5, line 5 has 0.5 (0.01 s apart, velocity limit 2)" in \
        log.skipped.line()
    assert np.array_equal(log.position[:, 0], np.delete(q, 3))
    log = C.read_csv_joint_states(tmp_path / "log.csv", columns, ("j1",))
    assert log.skipped.skipped == {} and len(log.t) == len(q)


def test_limits_written_as_zero_or_absent_bound_nothing(tmp_path):
    """lower = upper = 0, velocity / effort 0 or inf (URDFs that leave them unspecified):
    no limit, only the 1e9 bound; an empty file is refused."""
    (tmp_path / "log.csv").write_text("0,5,-7,40\n1,5,8,1e10\n")
    zero = {"lower": np.zeros(3), "upper": np.zeros(3), "velocity": np.zeros(3),
            "effort": np.array([0.0, np.inf, 0.0])}
    columns = C.ColumnMap(t=1, q=(2,), qd=(3,), effort=(4,))
    log = C.read_csv_joint_states(tmp_path / "log.csv", columns, ("j1",),
                                  {k: v[:1] for k, v in zero.items()})
    assert log.skipped.examples == {"absurd": (2,)} and log.skipped.first == {
        "absurd": "line 2: effort[j1] = 1e+10"}
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(C.ColumnMapError, match="empty.csv: an empty file"):
        C.read_csv_joint_states(tmp_path / "empty.csv", columns, ("j1",))


def test_a_yaml_map_reads_2_7_as_columns_not_base_60(tmp_path):
    """YAML 1.1 (PyYAML's safe_load) reads ``q: 2:7`` as the base-60 integer 127."""
    import yaml
    text = "t: 1\nq: 2:7\nqd: 8:13\neffort: [14, 15, 16, 17, 18, 19]\ndrive_gains: [1, 2]\n"
    assert yaml.safe_load(text)["q"] == 127                      # the trap
    (tmp_path / "map.yaml").write_text(text)
    mapping = C.load_column_map(tmp_path / "map.yaml")
    columns = C.ColumnMap.from_mapping(mapping)
    assert columns.q == (2, 3, 4, 5, 6, 7) and columns.qd == tuple(range(8, 14))
    assert columns.effort == tuple(range(14, 20)) and columns.drive_gains == (1.0, 2.0)


# ---------------------------------------------------------------- the real UR10e logs

def _csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_ur10e_19_column_files():
    """The two 2019-09-27 files have 19 columns (awk -F, '{print NF}' FILE | sort | uniq -c:
    594 x 19 and 1139 x 19): read with effort in 14-19, refused when the map asks for the
    target currents (columns 20-25) they lack."""
    data = require_shared_data(UR10E)
    log = _ur(data, "ur-19_09_27-11_28_22.csv")
    assert log.skipped.columns == 19 and log.skipped.kept == 594 and log.skipped.skipped == {}
    rows = _csv_rows(data / "identification_data" / "ur-19_09_27-11_28_22.csv")
    assert np.allclose(log.effort[-1], np.array(rows[-1][13:19], float) * GAINS)
    with pytest.raises(C.ColumnMapError, match="has 19 columns, the map asks for column 25"):
        C.read_csv_joint_states(data / "identification_data" / "ur-19_09_27-11_28_22.csv",
                                UR_MAP.replace(effort=tuple(range(20, 26))), log.names)


def test_ur10e_absurd_rows_of_11_32_02():
    """ur-19_09_27-11_32_02.csv begins with the logger's start-up garbage (lines 2-21).
    Lines with a value beyond 1e6 (Python csv below; awk gives the same: awk -F, '{for(i=1;
    i<=NF;i++) if ($i+0>1e6||$i+0<-1e6) {print NR; next}}'): 3 4 7 8 11 12 16 17 19 20.
    Beyond the URDF's limits (read by eye with sed -n 2,21p): line 2 q1 = 253 rad, line 6
    q1 = 30.8 rad, line 10 qd1 = 25.4 rad/s (limit 3.14), line 14 a current of 25.4 A on
    joint 4 (x 9.0 = 228 N m, limit 54 N m). Lines 5, 9, 13, 15, 18 hold shifted values
    within the limits (awk -F, 'NR<=23{print NR, $2, $3, $4}': their q1..q3 read e.g.
    0.412 -0.319 -0.306 and 0 0 0 where lines 21 on read 0 -1.571 0, the pose the log then
    holds): each is further from both its neighbours than the joints' velocity limits
    allow in 10-45 ms, a position jump; so is line 1, whose one neighbour is line 5's
    garbage (it is 0.1 rad from the pose of line 21, 0.2 s later: that it is garbage
    itself is not known). Line 21 on is kept."""
    data = require_shared_data(UR10E)
    rows = _csv_rows(data / "identification_data" / "ur-19_09_27-11_32_02.csv")
    huge = [k + 1 for k, r in enumerate(rows) if max(abs(float(v)) for v in r) > 1e6]
    assert huge == [3, 4, 7, 8, 11, 12, 16, 17, 19, 20]
    log = _ur(data, "ur-19_09_27-11_32_02.csv")
    r = log.skipped
    absurd = sorted(huge + [2, 6, 10, 14])
    assert r.skipped == {"absurd": 14, "position jump": 6} and r.kept == len(rows) - 20
    assert r.examples["absurd"] == tuple(absurd[:C.EXAMPLES])
    assert r.examples["position jump"] == (1, 5, 9, 13, 15)[:C.EXAMPLES]
    assert np.abs(log.position[0] - [0.0, -1.5707, 0.0, -1.5708, 0.0, 0.0]).max() < 1e-3
    assert "14 absurd (lines 2, 3, 4, 6, 7, ...; line 2: q[shoulder_pan_joint] = 253" in r.line()
    assert np.abs(log.effort).max() < 330 and np.isfinite(log.position).all()


def test_ur10e_truncated_row_and_startup_of_15harm50secLoad():
    """ur-20_02_19_15harm50secLoad.csv: awk -F, 'NF!=31{print NR, NF}' gives "6107 20" (the
    truncated last row); its lines 2-10 are start-up garbage stamped before line 1 (t
    3047.693 s) or at 2.7e154 s (line 5): of these, Python's csv finds a |value| > 1e6, or a
    |q| or |qd| > 10 (rad, rad/s: q1 = 253, 30.5, qd = 27), on 2-8 and 10;
    line 9 is all plausible numbers with t = 0: a stamp going back."""
    data = require_shared_data(UR10E)
    rows = _csv_rows(data / "identification_data" / "ur-20_02_19_15harm50secLoad.csv")
    assert [(k + 1, len(r)) for k, r in enumerate(rows) if len(r) != 31] == [(6107, 20)]
    early = [k + 1 for k, r in enumerate(rows[:30]) if float(r[0]) < float(rows[0][0])]
    assert early == [2, 3, 4, 6, 7, 8, 9, 10] and float(rows[4][0]) > 1e150   # line 5: t huge
    wild = [k + 1 for k, r in enumerate(rows[:30])
            if max(abs(float(v)) for v in r[:19]) > 1e6 or max(abs(float(v)) for v in r[1:13]) > 10]
    assert wild == [2, 3, 4, 5, 6, 7, 8, 10]
    r = _ur(data, "ur-20_02_19_15harm50secLoad.csv").skipped
    assert r.skipped == {"column count": 1, "absurd": 8, "stamp goes back": 1}
    assert r.examples["column count"] == (6107,) and r.examples["stamp goes back"] == (9,)
    assert r.examples["absurd"] == tuple(wild[:C.EXAMPLES]) and r.kept == 6107 - 10
    assert "1 column count (line 6107; line 6107: 20 fields, not 31)" in r.line()
    # lines 1 (t 3047.693) and 11 (3048.059, awk -F, 'NR==11{print $1}') are the kept rows
    # around the start-up garbage
    assert r.largest_gap == (pytest.approx(3048.059 - 3047.693), 1)
    assert r.line().endswith("largest gap between kept rows 0.366 s, after line 1")
    # the authors' window of the loaded 14-harmonic run: every row kept
    model = RobotModel.from_urdf_file(data / "ur10e.urdf")
    log = C.read_csv_joint_states(data / "identification_data" / "ur-20_02_19_14harm50secLoad.csv",
                                  UR_MAP.replace(rows=(308, 5071)), model.joint_names)
    assert log.skipped.kept == 5071 - 308 + 1 and log.skipped.skipped == {}
