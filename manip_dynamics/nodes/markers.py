"""``~/inertia_markers``: the tip's effective-inertia ellipsoid as RViz markers.

Nothing here creates a node or touches the middleware; only message types are imported.
``InertiaMarkers(snapshot).update(q, header)`` fills one MarkerArray, reused for every state
of that snapshot, from the core (one ``model.compute_all(..., ellipsoid=True)`` for the
ellipsoid and M, and ``model.frame_pose``); ``inertia_marker_array(snapshot, q, header)``
gives a fresh one; ``delete_all(header)`` clears them.

What is drawn (namespaces and ids are fixed, so RViz updates the markers in place)
-------------------------------------------------------------------------------------

``effective_inertia`` / 0, SPHERE: the translational effective-inertia ellipsoid of the
tip frame, ``Lambda_v = (J_v M^-1 J_v^T)^-1`` (3 x 3, kg), whose eigen-decomposition is
``Lambda_v = R diag(lambda_1, lambda_2, lambda_3) R^T`` (lambda ascending, R a proper
rotation whose column i is the i-th principal direction, in the root link's axes).

* pose: position = the tip frame's origin, orientation = R (unit quaternion,
  Shepperd's method); ``header.frame_id`` = the root link.
  The marker's local x, y, z axes are therefore the principal directions 1, 2, 3.
* size (the MAPPING): semi-axis ``a_i = scale * sqrt(lambda_i)`` metres, ``scale`` =
  ``markers.scale`` in m / sqrt(kg). A SPHERE's ``scale`` field is its DIAMETER, so
  ``marker.scale.{x,y,z} = 2 * a_i``. Equivalently the drawn surface is
  ``{x : x^T Lambda_v^-1 x = scale^2}``: the set of tip momenta ``p = Lambda_v v`` of the
  tip velocities with ``v^T Lambda_v v = scale^2``. Long axis = the direction in which the
  tip feels heaviest; ``R diag((marker.scale / (2 scale))^2) R^T`` gives back ``Lambda_v``.
* caps (documented, tested): near a singularity one lambda grows without bound (``inf``
  exactly at it). Each lambda is capped at ``MAX_AXIS_RATIO**2 * lambda_min`` before the
  mapping, i.e. no semi-axis is drawn longer than ``MAX_AXIS_RATIO`` (= 10) times the
  shortest; every diameter is at least ``MIN_DIAMETER`` (1e-4 m) so RViz never gets a
  zero scale. If every lambda is infinite (J_v = 0, e.g. the tip is the root link) a sphere
  of diameter ``2 * scale`` is drawn, red.
* colour: the condition number ``c`` of ``Lambda_v`` (= that of ``J_v M^-1 J_v^T``)
  against the node's threshold ``singular_condition``: ``t = clip(log(c) /
  log(singular_condition), 0, 1)``; green (t = 0, isotropic) -> yellow (t = 0.5) -> red
  (t = 1, at or beyond the threshold, and whenever the core flags the state singular).
  Alpha = ``markers.alpha``.

``effective_inertia_label`` / 0, TEXT_VIEW_FACING: above the tip, the principal effective
masses in kg (``inf`` where singular) and the condition number.

``mass_matrix_eigenvalues`` / 0..n-1, CUBE (only when ``markers.show_mass_matrix``): one
bar per eigenvalue ``mu_i`` of the joint-space M(q) (ascending), standing on the root
link's x-y plane at ``x = -BAR_OFFSET``, ``y = (i - (n-1)/2) * BAR_SPACING``, height
``BAR_HEIGHT_PER_SCALE * scale * mu_i / mu_max`` (relative: the tallest bar is
``BAR_HEIGHT_PER_SCALE * scale`` m; at least ``MIN_DIAMETER``); coloured like the
ellipsoid by cond(M). ``mass_matrix_label`` / 0, TEXT_VIEW_FACING lists the values.
When ``show_mass_matrix`` is false those namespaces are not sent: the node publishes a
DELETEALL whenever the marker options change, so switching the option off clears the bars.

Never garbage: if a pose, scale or colour would not be finite (a joint value so large that
the tip position overflows, an absurd ``markers.scale``), ``inertia_marker_array`` raises
``MarkerError`` instead of returning the array; the node then skips that update.
"""
from __future__ import annotations

import math

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from manip_dynamics.core.errors import ManipDynamicsError
from manip_dynamics.core.dynamics.kernels import spd_condition_number

ELLIPSOID_NS = "effective_inertia"
ELLIPSOID_LABEL_NS = "effective_inertia_label"
MASS_BARS_NS = "mass_matrix_eigenvalues"
MASS_LABEL_NS = "mass_matrix_label"

MAX_AXIS_RATIO = 10.0        # longest drawn semi-axis <= this times the shortest
MIN_DIAMETER = 1e-4          # m; RViz rejects zero scales
BAR_HEIGHT_PER_SCALE = 5.0   # tallest mass-matrix bar = 5 * markers.scale metres
BAR_WIDTH_PER_SCALE = 0.5    # bar footprint = 0.5 * markers.scale metres
BAR_SPACING_PER_SCALE = 1.0  # centre-to-centre distance of the bars, * markers.scale
BAR_OFFSET = 0.5             # m behind the root origin (-x)
TEXT_HEIGHT_PER_SCALE = 0.4  # text height = 0.4 * markers.scale metres


class MarkerError(ManipDynamicsError, ValueError):
    """The markers for this state would hold NaN or inf (the message says where)."""


# --------------------------------------------------------------------------- mapping

def capped_eigenvalues(eigenvalues) -> np.ndarray:
    """The eigenvalues actually drawn: each capped at ``MAX_AXIS_RATIO**2 * lambda_min``.

    ``inf`` (singular direction) becomes the cap. All infinite: ones (unit sphere).
    """
    lam = np.asarray(eigenvalues, dtype=float)
    finite = lam[np.isfinite(lam)]
    if finite.size == 0:
        return np.ones_like(lam)
    lam_min = max(float(finite.min()), 0.0)
    cap = MAX_AXIS_RATIO ** 2 * lam_min if lam_min > 0.0 else float(finite.max())
    return np.minimum(np.where(np.isfinite(lam), lam, cap), cap)


def ellipsoid_diameters(eigenvalues, scale: float) -> np.ndarray:
    """Marker SPHERE scale (diameters, m) for the eigenvalues of Lambda (kg): 2 scale sqrt(lambda)."""
    lam = np.clip(capped_eigenvalues(eigenvalues), 0.0, None)
    return np.maximum(2.0 * float(scale) * np.sqrt(lam), MIN_DIAMETER)


def singularity_fraction(condition_number: float, singular_condition: float,
                         singular: bool = False) -> float:
    """t in [0, 1]: log(cond) / log(threshold), clipped; 1 when singular."""
    if singular or not math.isfinite(condition_number):
        return 1.0
    if singular_condition <= 1.0:
        return 1.0 if condition_number > 1.0 else 0.0
    c = max(float(condition_number), 1.0)
    return min(max(math.log(c) / math.log(singular_condition), 0.0), 1.0)


def condition_color(t: float, alpha: float) -> ColorRGBA:
    """Green (t = 0) -> yellow (0.5) -> red (1)."""
    t = min(max(float(t), 0.0), 1.0)
    return ColorRGBA(r=min(1.0, 2.0 * t), g=min(1.0, 2.0 * (1.0 - t)), b=0.0,
                     a=min(max(float(alpha), 0.0), 1.0))


def rotation_quaternion(rotation: np.ndarray) -> Quaternion:
    """Proper rotation matrix (3 x 3) -> unit geometry_msgs/Quaternion.

    A left-handed basis (det < 0, as an eigenbasis may come) has its third column flipped
    first. Shepperd's method: the largest of 4 w^2, 4 x^2, 4 y^2, 4 z^2 (trace and diagonal
    combinations) is taken as the pivot, so no division by a small number; the result is
    normalised. Written out (no scipy Rotation object): ~15x cheaper per marker update.
    """
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = np.asarray(rotation, dtype=float)
    det = (r00 * (r11 * r22 - r12 * r21) - r01 * (r10 * r22 - r12 * r20)
           + r02 * (r10 * r21 - r11 * r20))
    if det < 0.0:
        r02, r12, r22 = -r02, -r12, -r22
    trace = r00 + r11 + r22
    pivot = max(trace, r00, r11, r22)
    if pivot == trace:
        s = 2.0 * math.sqrt(max(1.0 + trace, 0.0))
        w, x, y, z = 0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s
    elif pivot == r00:
        s = 2.0 * math.sqrt(max(1.0 + r00 - r11 - r22, 0.0))
        w, x, y, z = (r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s
    elif pivot == r11:
        s = 2.0 * math.sqrt(max(1.0 - r00 + r11 - r22, 0.0))
        w, x, y, z = (r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s
    else:
        s = 2.0 * math.sqrt(max(1.0 - r00 - r11 + r22, 0.0))
        w, x, y, z = (r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    return Quaternion(x=x / norm, y=y / norm, z=z / norm, w=w / norm)


# --------------------------------------------------------------------------- markers

def _marker(header: Header, ns: str, marker_id: int, marker_type: int) -> Marker:
    """A marker that keeps ``header`` (shared by every marker of one array)."""
    return Marker(header=header, ns=ns, id=marker_id, type=marker_type, action=Marker.ADD,
                  lifetime=Duration(sec=0, nanosec=0), frame_locked=False)   # until replaced


def _fmt(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.3g}"


def inertia_marker_array(snapshot, q, header: Header) -> MarkerArray:
    """The MarkerArray of ``~/inertia_markers`` for joint positions ``q`` (model order).

    ``header.stamp`` is copied into every marker; ``header.frame_id`` should be the root
    link (an empty frame_id is replaced by ``snapshot.model.root_link``). See the module
    docstring for the mapping. Raises the core's errors for a bad ``q``, MarkerError for
    numbers that would not be finite. A fresh array: the node reuses one
    (:class:`InertiaMarkers`).
    """
    return InertiaMarkers(snapshot).update(q, header)


class InertiaMarkers:
    """One MarkerArray for one Snapshot, updated in place for each new ``q``.

    The markers' namespaces, ids, types, bar widths, text sizes and label colours depend on
    the snapshot only and are built once; ``update`` computes the state's numbers, checks
    them finite (MarkerError otherwise, the array unchanged) and writes them into the same
    message objects. Building the messages anew cost ~0.6 ms per update on the Panda with
    the mass bars (measured in-process), several joint_states callbacks' worth; the array
    is only read by ``publish``, which serialises it before returning.
    """

    def __init__(self, snapshot):
        self.snapshot = snapshot
        model, options = snapshot.model, snapshot.markers
        self._scale = scale = float(options.scale)
        self._header = Header()
        text_height = max(TEXT_HEIGHT_PER_SCALE * scale, MIN_DIAMETER)
        self._sphere = _marker(self._header, ELLIPSOID_NS, 0, Marker.SPHERE)
        self._label = self._text(ELLIPSOID_LABEL_NS, text_height)
        self.array = MarkerArray(markers=[self._sphere, self._label])
        self._bars = []
        if options.show_mass_matrix:
            width = max(BAR_WIDTH_PER_SCALE * scale, MIN_DIAMETER)
            spacing = BAR_SPACING_PER_SCALE * scale
            n = model.n
            for i in range(n):
                bar = _marker(self._header, MASS_BARS_NS, i, Marker.CUBE)
                bar.pose.position = Point(x=-BAR_OFFSET, y=(i - (n - 1) / 2.0) * spacing)
                bar.pose.orientation.w = 1.0
                bar.scale = Vector3(x=width, y=width)
                self._bars.append(bar)
            self._mass_label = self._text(MASS_LABEL_NS, text_height)
            self._mass_label.pose.position = Point(x=-BAR_OFFSET, y=0.0,
                                                   z=BAR_HEIGHT_PER_SCALE * scale + scale)
            self.array.markers.extend(self._bars + [self._mass_label])

    def _text(self, ns: str, height: float) -> Marker:
        text = _marker(self._header, ns, 0, Marker.TEXT_VIEW_FACING)
        text.pose.orientation.w = 1.0
        text.scale.z = height
        text.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
        return text

    def update(self, q, header: Header) -> MarkerArray:
        """The array for joint positions ``q`` (model order) stamped with ``header``."""
        snapshot = self.snapshot
        model, options, scale = snapshot.model, snapshot.markers, self._scale
        q = np.asarray(q, dtype=float)
        tip = snapshot.tip_frame

        # one bundle gives the ellipsoid and M (for the bars); the pose is kinematics only
        terms, ellipsoid = model.compute_all(q, np.zeros_like(q), tip, linear_only=True,
                                             ellipsoid=True)
        p = np.asarray(model.frame_pose(q, tip), dtype=float)[:3, 3]
        eigenvalues = np.asarray(ellipsoid.eigenvalues, dtype=float)
        cond = float(ellipsoid.condition_number)
        t = singularity_fraction(cond, float(snapshot.singular_condition),
                                 bool(ellipsoid.singular) or not np.any(np.isfinite(eigenvalues)))
        d = ellipsoid_diameters(eigenvalues, scale)
        label_z = p[2] + 0.5 * float(d.max()) + scale
        if options.show_mass_matrix:
            mu = np.linalg.eigvalsh(np.asarray(terms.M, dtype=float))
            mu_max = float(mu.max()) if mu.size and mu.max() > 0.0 else 1.0
            heights = np.maximum(BAR_HEIGHT_PER_SCALE * scale * mu / mu_max, MIN_DIAMETER)
        else:
            mu = heights = np.zeros(0)
        numbers = np.concatenate((p, d, [label_z], heights))
        if not np.all(np.isfinite(numbers)):
            raise MarkerError(f"markers for this state would not be finite (tip at {p[0]:g} "
                              f"{p[1]:g} {p[2]:g}, diameters {d[0]:g} {d[1]:g} {d[2]:g}, "
                              f"bars {heights}): joint values or markers.scale too large?")
        orientation = rotation_quaternion(ellipsoid.eigenvectors)

        self._header.stamp = Time(sec=header.stamp.sec, nanosec=header.stamp.nanosec)
        self._header.frame_id = header.frame_id or model.root_link
        x, y, z = float(p[0]), float(p[1]), float(p[2])
        self._sphere.pose = Pose(position=Point(x=x, y=y, z=z), orientation=orientation)
        self._sphere.scale = Vector3(x=float(d[0]), y=float(d[1]), z=float(d[2]))
        self._sphere.color = condition_color(t, options.alpha)
        self._label.pose.position = Point(x=x, y=y, z=float(label_z))
        self._label.text = (f"{tip}: m_eff {' / '.join(_fmt(v) for v in eigenvalues)} kg, "
                            f"cond {_fmt(cond)}")
        if self._bars:
            cond_m = spd_condition_number(terms.M) if mu.size else math.inf  # the core's rule
            color = condition_color(
                singularity_fraction(cond_m, float(snapshot.singular_condition)),
                options.alpha)
            for bar, height in zip(self._bars, heights):
                bar.pose.position.z = float(height) / 2.0
                bar.scale.z = float(height)
                bar.color = color
            self._mass_label.text = "eig M(q): " + ", ".join(_fmt(float(v)) for v in mu)
        return self.array


def delete_all(header: Header) -> MarkerArray:
    """A MarkerArray with one DELETEALL marker: clears every marker of this publisher."""
    m = Marker()
    m.header = Header(stamp=Time(sec=header.stamp.sec, nanosec=header.stamp.nanosec),
                      frame_id=header.frame_id)
    m.action = Marker.DELETEALL
    return MarkerArray(markers=[m])
