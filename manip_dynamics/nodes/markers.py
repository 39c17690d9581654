"""``~/inertia_markers``: the tip's effective-inertia ellipsoid as RViz markers (pure functions).

Nothing here creates a node or touches the middleware; only message types are imported.
``inertia_marker_array(snapshot, q, header)`` builds the whole MarkerArray from the core
(one ``model.compute_all(..., ellipsoid=True)`` for the ellipsoid and M, and
``model.frame_pose``); ``delete_all(header)`` clears it.

What is drawn (namespaces and ids are fixed, so RViz updates the markers in place)
-------------------------------------------------------------------------------------

``effective_inertia`` / 0, SPHERE: the translational effective-inertia ellipsoid of the
tip frame, ``Lambda_v = (J_v M^-1 J_v^T)^-1`` (3 x 3, kg), whose eigen-decomposition is
``Lambda_v = R diag(lambda_1, lambda_2, lambda_3) R^T`` (lambda ascending, R a proper
rotation whose column i is the i-th principal direction, in the root link's axes).

* pose: position = the tip frame's origin, orientation = R (quaternion via
  ``scipy.spatial.transform.Rotation``, normalised); ``header.frame_id`` = the root link.
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
from copy import copy

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from scipy.spatial.transform import Rotation
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from manip_dynamics.core.errors import ManipDynamicsError

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
    return float(np.clip(math.log(c) / math.log(singular_condition), 0.0, 1.0))


def condition_color(t: float, alpha: float) -> ColorRGBA:
    """Green (t = 0) -> yellow (0.5) -> red (1)."""
    t = float(np.clip(t, 0.0, 1.0))
    return ColorRGBA(r=float(min(1.0, 2.0 * t)), g=float(min(1.0, 2.0 * (1.0 - t))), b=0.0,
                     a=float(np.clip(alpha, 0.0, 1.0)))


def rotation_quaternion(rotation: np.ndarray) -> Quaternion:
    """Proper rotation matrix (3 x 3) -> unit geometry_msgs/Quaternion."""
    r = np.asarray(rotation, dtype=float)
    if np.linalg.det(r) < 0.0:          # an eigenbasis may come left-handed: flip one axis
        r = r.copy()
        r[:, 2] = -r[:, 2]
    x, y, z, w = Rotation.from_matrix(r).as_quat()
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    return Quaternion(x=x / norm, y=y / norm, z=z / norm, w=w / norm)


# --------------------------------------------------------------------------- markers

def _copy_header(header: Header) -> Header:
    """An independent Header (copy.deepcopy of a message is ~20x slower)."""
    return Header(stamp=Time(sec=header.stamp.sec, nanosec=header.stamp.nanosec),
                  frame_id=header.frame_id)


# Marker() builds ~15 default sub-messages (~50 us); a shallow copy of this template is
# ~15x cheaper. Copies share only sub-messages nobody assigns into (points, colors,
# texture, mesh_file, ...); header, pose, scale and colour are always fresh objects.
_TEMPLATE = Marker()


def _marker(header: Header, ns: str, marker_id: int, marker_type: int) -> Marker:
    m = copy(_TEMPLATE)
    m.header = _copy_header(header)
    m.ns = ns
    m.id = marker_id
    m.type = marker_type
    m.action = Marker.ADD
    m.pose = Pose()
    m.scale = Vector3()
    m.color = ColorRGBA()
    m.lifetime = Duration(sec=0, nanosec=0)   # until replaced or deleted
    m.frame_locked = False
    return m


def _fmt(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.3g}"


def inertia_marker_array(snapshot, q, header: Header) -> MarkerArray:
    """The MarkerArray of ``~/inertia_markers`` for joint positions ``q`` (model order).

    ``header.stamp`` is copied into every marker; ``header.frame_id`` should be the root
    link (an empty frame_id is replaced by ``snapshot.model.root_link``). See the module
    docstring for the mapping. Raises the core's errors for a bad ``q``.
    """
    model = snapshot.model
    options = snapshot.markers
    scale = float(options.scale)
    header = _copy_header(header)
    if not header.frame_id:
        header.frame_id = model.root_link
    q = np.asarray(q, dtype=float)
    tip = snapshot.tip_frame

    # one bundle gives the ellipsoid and M (for the bars); the pose is kinematics only
    terms, ellipsoid = model.compute_all(q, np.zeros_like(q), tip, linear_only=True,
                                         ellipsoid=True)
    X_root_tip = np.asarray(model.frame_pose(q, tip), dtype=float)
    p_root_tip = X_root_tip[:3, 3]
    eigenvalues = np.asarray(ellipsoid.eigenvalues, dtype=float)
    all_singular = not np.any(np.isfinite(eigenvalues))
    t = singularity_fraction(float(ellipsoid.condition_number),
                             float(snapshot.singular_condition),
                             bool(ellipsoid.singular) or all_singular)

    out = MarkerArray()

    sphere = _marker(header, ELLIPSOID_NS, 0, Marker.SPHERE)
    sphere.pose = Pose(position=Point(x=float(p_root_tip[0]), y=float(p_root_tip[1]),
                                      z=float(p_root_tip[2])),
                       orientation=rotation_quaternion(ellipsoid.eigenvectors))
    d = ellipsoid_diameters(eigenvalues, scale)
    sphere.scale = Vector3(x=float(d[0]), y=float(d[1]), z=float(d[2]))
    sphere.color = condition_color(t, options.alpha)
    out.markers.append(sphere)

    label = _marker(header, ELLIPSOID_LABEL_NS, 0, Marker.TEXT_VIEW_FACING)
    label.pose.position = Point(x=float(p_root_tip[0]), y=float(p_root_tip[1]),
                                z=float(p_root_tip[2] + 0.5 * float(d.max()) + scale))
    label.pose.orientation.w = 1.0
    label.scale.z = max(TEXT_HEIGHT_PER_SCALE * scale, MIN_DIAMETER)
    label.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
    label.text = (f"{tip}: m_eff {' / '.join(_fmt(x) for x in eigenvalues)} kg, "
                  f"cond {_fmt(float(ellipsoid.condition_number))}")
    out.markers.append(label)

    n = model.n
    if options.show_mass_matrix:
        mu = np.linalg.eigvalsh(np.asarray(terms.M, dtype=float))
        mu_max = float(mu.max()) if mu.size and mu.max() > 0.0 else 1.0
        cond_m = float(mu.max() / mu.min()) if mu.size and mu.min() > 0.0 else math.inf
        color = condition_color(
            singularity_fraction(cond_m, float(snapshot.singular_condition)), options.alpha)
        width = max(BAR_WIDTH_PER_SCALE * scale, MIN_DIAMETER)
        spacing = BAR_SPACING_PER_SCALE * scale
        for i, value in enumerate(mu):
            height = max(BAR_HEIGHT_PER_SCALE * scale * float(value) / mu_max, MIN_DIAMETER)
            bar = _marker(header, MASS_BARS_NS, i, Marker.CUBE)
            bar.pose.position = Point(x=-BAR_OFFSET, y=(i - (n - 1) / 2.0) * spacing,
                                      z=height / 2.0)
            bar.pose.orientation.w = 1.0
            bar.scale = Vector3(x=width, y=width, z=height)
            bar.color = color
            out.markers.append(bar)
        text = _marker(header, MASS_LABEL_NS, 0, Marker.TEXT_VIEW_FACING)
        text.pose.position = Point(x=-BAR_OFFSET, y=0.0,
                                   z=BAR_HEIGHT_PER_SCALE * scale + scale)
        text.pose.orientation.w = 1.0
        text.scale.z = max(TEXT_HEIGHT_PER_SCALE * scale, MIN_DIAMETER)
        text.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
        text.text = "eig M(q): " + ", ".join(_fmt(float(v)) for v in mu)
        out.markers.append(text)
    _check_finite(out)
    return out


def _check_finite(array: MarkerArray) -> None:
    for m in array.markers:
        p, o, s, c = m.pose.position, m.pose.orientation, m.scale, m.color
        numbers = (p.x, p.y, p.z, o.x, o.y, o.z, o.w, s.x, s.y, s.z, c.r, c.g, c.b, c.a)
        if not all(math.isfinite(x) for x in numbers):
            raise MarkerError(f"marker {m.ns}/{m.id} would not be finite (pose {p.x:g} "
                              f"{p.y:g} {p.z:g}, scale {s.x:g} {s.y:g} {s.z:g}): joint "
                              "values or markers.scale too large?")


def delete_all(header: Header) -> MarkerArray:
    """A MarkerArray with one DELETEALL marker: clears every marker of this publisher."""
    m = Marker()
    m.header = _copy_header(header)
    m.action = Marker.DELETEALL
    return MarkerArray(markers=[m])
