"""URDF -> MuJoCo model: the simulated arm's plant, its scene and its deliberate errors.

``build_model(urdf_xml, model, options)`` compiles the same URDF the dynamics node reads:

* ``<collision>`` and ``<visual>`` are dropped before MuJoCo reads the text (their meshes
  are often not findable: ``package://`` URIs, DAE files), and every link gets capsules
  from its origin to each child link's origin (a sphere on a leaf), derived from the
  kinematic tree. The capsules collide with the floor and the obstacle only (never with
  each other: coincident frames would touch permanently).
* importer pitfalls (docs/simulation.md): ``fusestatic`` off (fusing drops the inertia of
  zero-mass fixed links), ``inertiafromgeom`` false (a collision geometry must not invent a
  mass), no inertia balancing (it changes the dynamics; a URDF that needs it is refused
  with MuJoCo's message).
* joints: URDF position limits -> MuJoCo ranges (``limited`` set explicitly: continuous
  joints stay unlimited), ``<dynamics damping friction>`` -> ``dof_damping`` and
  ``dof_frictionloss`` (overridable), the model's armature -> ``dof_armature`` (MuJoCo adds
  it to M's diagonal as the core does), limit time constant two steps; ``<limit effort>``
  -> ``ctrlrange`` of one motor per joint (transmission: the joint, gear 1; effort 0 =
  unlimited).
* ``<mimic>`` joints: MuJoCo's importer couples them by a joint equality, soft by default
  (time constant 0.02 s: the follower lags and its joint carries constraint torque the
  model, a rigid coupling, never has); its time constant is set to two steps, as the
  limits', so that plant and model agree.
* gravity = the core model's; dense constraint Jacobians (``efc_J`` rows read in joint
  space).
* perturbations of the truth: link masses (and inertia tensors) and centres of mass scaled
  by factors, an extra payload body at a named link. The node keeps publishing the nominal
  URDF: the plant's truth then differs from the model, as on hardware.

Frames: the URDF root link is MuJoCo's world body (fixed base); every length in metres,
root frame, z up for the floor.
"""
from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from manip_dynamics.core.extras import import_extra

mujoco = import_extra("mujoco", __name__)

# MuJoCo's warnings (e.g. "equal lower and upper limits", an unstable state) go to the
# "mujoco" Python logger instead of MUJOCO_LOG.TXT in the working directory.
mujoco.set_mju_user_warning(lambda text: logging.getLogger("mujoco").warning(text))

# contype / conaffinity bits: arm geoms collide with the environment, never with each other.
ARM_BITS, ENVIRONMENT_BITS = (2, 0), (1, 2)
INTEGRATOR_ENUM = {"rk4": mujoco.mjtIntegrator.mjINT_RK4,
                   "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
                   # MuJoCo's Euler is semi-implicit: velocity first, position with it.
                   "semi_implicit_euler": mujoco.mjtIntegrator.mjINT_EULER}


@dataclass
class SceneOptions:
    """What to build around and into the URDF's arm (defaults: the nominal arm, a floor)."""
    timestep: float = 1e-3
    integrator: str = "rk4"
    viscous: np.ndarray | None = None      # (n,) dof damping; None: the URDF's
    coulomb: np.ndarray | None = None      # (n,) friction loss; None: the URDF's
    floor: bool = True
    floor_height: float = 0.0
    collision_radius: float = 0.04
    obstacle_size: tuple | None = None     # half sizes (m); None: no obstacle
    obstacle_position: tuple = (0.5, 0.0, 0.2)
    obstacle_rpy: tuple = (0.0, 0.0, 0.0)
    mass_factors: np.ndarray | None = None  # (n,) per joint's child link, or scalar
    com_factors: np.ndarray | None = None
    payload_link: str = ""
    payload_mass: float = 0.0
    payload_com: tuple = (0.0, 0.0, 0.0)
    payload_radius: float = 0.05


def strip_geometry(urdf_xml: str) -> str:
    """The URDF without ``<collision>`` and ``<visual>`` elements (no mesh is ever read)."""
    root = ET.fromstring(urdf_xml)
    for link in root.iter("link"):
        for tag in ("collision", "visual"):
            for element in link.findall(tag):
                link.remove(element)
    return ET.tostring(root, encoding="unicode")


def urdf_spec(urdf_xml: str) -> mujoco.MjSpec:
    """MjSpec of the stripped URDF with the importer options this package relies on."""
    spec = mujoco.MjSpec.from_string(strip_geometry(urdf_xml))
    spec.compiler.fusestatic = False
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.compiler.balanceinertia = False
    spec.compiler.discardvisual = False
    return spec


def _configure_joints(spec, model, options: SceneOptions):
    """Limits, damping, friction loss, armature (the model's) and one torque motor per model
    joint."""
    viscous = model.viscous if options.viscous is None else options.viscous
    coulomb = model.coulomb if options.coulomb is None else options.coulomb
    for i, name in enumerate(model.joint_names):
        joint = spec.joint(name)
        lower, upper = model.position_lower[i], model.position_upper[i]
        bounded = bool(np.isfinite(lower) and np.isfinite(upper) and lower < upper)
        joint.limited = (mujoco.mjtLimited.mjLIMITED_TRUE if bounded
                         else mujoco.mjtLimited.mjLIMITED_FALSE)
        if bounded:
            joint.range = [lower, upper]
            # Stiffest limit MuJoCo allows (time constant 2 steps): ~1e-2 rad overshoot
            # when the released Panda hits a stop, instead of ~0.1 rad with the default.
            joint.solref_limit = [2.0 * options.timestep, 1.0]
        joint.damping = [float(viscous[i]), 0.0, 0.0]
        joint.frictionloss = float(coulomb[i])
        joint.armature = float(model.armature[i])
        joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE   # the motor's ctrlrange clamps
        effort = float(model.effort_limits[i])
        limited = bool(np.isfinite(effort) and effort > 0)
        spec.add_actuator(
            name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT, gear=[1, 0, 0, 0, 0, 0],
            ctrllimited=(mujoco.mjtLimited.mjLIMITED_TRUE if limited
                         else mujoco.mjtLimited.mjLIMITED_FALSE),
            ctrlrange=[-effort, effort] if limited else [0.0, 0.0])


def _segments(body):
    """(from, to) points in ``body``'s frame: to each child's origin, or a point on a leaf."""
    children = [c for c in body.bodies]
    ends = [np.array(c.pos, dtype=float) for c in children]
    return [(np.zeros(3), e) for e in ends] or [(np.zeros(3), np.zeros(3))]


def _add_capsules(spec, radius: float):
    """Capsules along the links (spheres where a segment has no length)."""
    contype, conaffinity = ARM_BITS
    for body in spec.worldbody.bodies:
        _add_capsules_below(body, radius, contype, conaffinity)


def _add_capsules_below(body, radius, contype, conaffinity):
    for k, (a, b) in enumerate(_segments(body)):
        common = dict(name=f"{body.name}_capsule{k}", contype=contype, conaffinity=conaffinity,
                      rgba=[0.85, 0.55, 0.2, 1.0], mass=0.0)
        if np.linalg.norm(b - a) < 1e-6:
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[radius, 0, 0], pos=a,
                          **common)
        else:
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[radius, 0, 0],
                          fromto=np.concatenate([a, b]), **common)
    for child in body.bodies:
        _add_capsules_below(child, radius, contype, conaffinity)


def _add_environment(spec, options: SceneOptions):
    """Floor plane, optional obstacle box, lights, sky (the last two for pictures only)."""
    contype, conaffinity = ENVIRONMENT_BITS
    world = spec.worldbody
    spec.add_texture(name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
                     builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT, rgb1=[0.95, 0.96, 0.98],
                     rgb2=[0.55, 0.65, 0.78], width=64, height=64)
    spec.add_texture(name="grid", type=mujoco.mjtTexture.mjTEXTURE_2D,
                     builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER, rgb1=[0.82, 0.84, 0.86],
                     rgb2=[0.7, 0.72, 0.75], width=64, height=64)
    spec.add_material(name="grid", textures=["", "grid"], texrepeat=[8, 8])
    world.add_light(name="key", pos=[1.0, -1.0, 3.0], dir=[-0.3, 0.3, -1.0], castshadow=False,
                    diffuse=[0.6, 0.6, 0.6])
    world.add_light(name="fill", pos=[-2.0, 1.0, 2.0], dir=[0.6, -0.3, -0.6], castshadow=False,
                    diffuse=[0.4, 0.4, 0.4])
    if options.floor:
        world.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[2, 2, 0.1],
                       pos=[0, 0, options.floor_height], material="grid",
                       contype=contype, conaffinity=conaffinity)
    if options.obstacle_size is not None:
        quat = np.zeros(4)
        mujoco.mju_euler2Quat(quat, np.asarray(options.obstacle_rpy, dtype=float), "XYZ")
        world.add_geom(name="obstacle", type=mujoco.mjtGeom.mjGEOM_BOX,
                       size=list(options.obstacle_size), pos=list(options.obstacle_position),
                       quat=quat, rgba=[0.3, 0.5, 0.85, 1], contype=contype,
                       conaffinity=conaffinity)


def _perturb(spec, urdf_xml: str, model, options: SceneOptions):
    """Scale masses/inertias and centres of mass; attach the payload body."""
    children = {j.get("name"): j.find("child").get("link")
                for j in ET.fromstring(urdf_xml).findall("joint")}
    for factors, apply in ((options.mass_factors, _scale_mass), (options.com_factors, _scale_com)):
        if factors is None:
            continue
        factors = np.atleast_1d(np.asarray(factors, dtype=float))
        if factors.size == 1:
            for body in spec.bodies[1:]:
                apply(body, float(factors[0]))
        else:
            for name, f in zip(model.joint_names, factors):
                apply(spec.body(children[name]), float(f))
    if options.payload_link and options.payload_mass > 0:
        parent = spec.body(options.payload_link)
        if parent is None:
            raise ValueError(f"payload_link: no link {options.payload_link!r} in the URDF")
        moment = 0.4 * options.payload_mass * options.payload_radius ** 2   # solid sphere
        # A body at the link origin with its centre of mass at payload_com (link frame).
        payload = parent.add_body(name="payload", pos=[0.0, 0.0, 0.0])
        payload.mass = options.payload_mass
        payload.ipos = list(options.payload_com)
        payload.fullinertia = [moment, moment, moment, 0.0, 0.0, 0.0]
        payload.explicitinertial = True
        payload.add_geom(name="payload_sphere", type=mujoco.mjtGeom.mjGEOM_SPHERE,
                         pos=list(options.payload_com),
                         size=[options.payload_radius, 0, 0], rgba=[0.8, 0.2, 0.2, 1],
                         contype=ARM_BITS[0], conaffinity=ARM_BITS[1], mass=0.0)


def _scale_mass(body, f):
    body.mass = body.mass * f
    body.fullinertia = np.asarray(body.fullinertia) * f
    body.inertia = np.asarray(body.inertia) * f


def _scale_com(body, f):
    body.ipos = np.asarray(body.ipos) * f


def build_spec(urdf_xml: str, model, options: SceneOptions | None = None) -> mujoco.MjSpec:
    """The MjSpec of the plant: arm (joints, motors, capsules), environment, perturbations.

    ``model`` is the core's RobotModel of the same URDF: joint names, limits, friction and
    gravity are taken from it, so plant and node read the URDF's numbers the same way."""
    options = options or SceneOptions()
    spec = urdf_spec(urdf_xml)
    spec.option.timestep = float(options.timestep)
    spec.option.integrator = INTEGRATOR_ENUM[options.integrator]
    spec.option.gravity = np.asarray(model.gravity, dtype=float)
    spec.option.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    _configure_joints(spec, model, options)
    for equality in spec.equalities:        # the URDF's <mimic> couplings (docstring)
        equality.solref = [2.0 * options.timestep, 1.0]
    _add_capsules(spec, options.collision_radius)
    _perturb(spec, urdf_xml, model, options)
    _add_environment(spec, options)
    spec.visual.global_.offwidth = 1280
    spec.visual.global_.offheight = 960
    return spec


def build_model(urdf_xml: str, model, options: SceneOptions | None = None) -> mujoco.MjModel:
    """Compile :func:`build_spec`; MuJoCo's refusal (e.g. an inertia violating the triangle
    inequality, a moving link without mass) is raised as a one-line ValueError naming
    the link (:func:`compile_error_text`)."""
    try:
        return build_spec(urdf_xml, model, options).compile()
    except (ValueError, RuntimeError) as err:   # mujoco raises ValueError with its text
        raise ValueError(compile_error_text(urdf_xml, str(err))) from err


def compile_error_text(urdf_xml: str, error: str) -> str:
    """MuJoCo's compile error (several lines, the element last: ``Element name 'link2',
    id 3``) as one line naming the link and the joint that moves it, with what to add
    when the link has no mass or inertia."""
    lines = [ln.strip() for ln in error.splitlines() if ln.strip()]
    name = next((m.group(1) for ln in lines
                 if (m := re.match(r"Element name '([^']*)'", ln))), "")
    what = "; ".join(ln.removeprefix("Error: ") for ln in lines
                     if not ln.startswith("Element "))
    if not name:
        return f"MuJoCo cannot compile this URDF: {what}"
    joint = next((j.get("name") for j in ET.fromstring(urdf_xml).iter("joint")
                  if (j.find("child") is not None and j.find("child").get("link") == name)),
                 None)
    where = f"link '{name}'" + (f" (moved by joint '{joint}')" if joint else "")
    if "mass and inertia of moving bodies" in what:
        return (f"MuJoCo cannot simulate {where}: it has no mass or no inertia (MuJoCo needs "
                "both > 1e-15 on every body a joint moves); give the link an <inertial> "
                "with a positive mass and a positive-definite inertia")
    return f"MuJoCo cannot compile this URDF at {where}: {what}"
