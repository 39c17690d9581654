"""Building the simulator's plant from its parameter values (no ROS).

``load_robot(robot, urdf_file)`` reads the URDF the node will publish and the core's model
of it; ``build_plant(urdf_xml, model, values, h)`` turns the parameter values (name ->
value, unset arrays as None or []) into a :class:`MujocoPlant` or a :class:`ModelPlant`.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.dynamics.description import load_description
from manip_dynamics.sim.model_plant import ModelPlant
from manip_dynamics.sim.mujoco_plant import MujocoPlant
from manip_dynamics.sim.parameters import per_joint
from manip_dynamics.sim.scene import SceneOptions

def load_robot(robot: str, urdf_file: str, xacro_args=None, package_paths=None):
    """(RobotModel, URDF text) from ``urdf_file`` (URDF or xacro, expanded with
    ``xacro_args``: core.description.load_description) if given, else the embedded
    ``robot``."""
    path = os.path.expanduser(urdf_file) if urdf_file else robots.path(robot)
    xml = load_description(path, xacro_args or None, package_paths)
    return RobotModel.from_urdf_string(xml), xml


def _vector(values, name, default=None):
    v = values.get(name)
    return default if v is None or len(v) == 0 else np.asarray(v, dtype=float)


def scene_options(values: dict, model, h: float) -> SceneOptions:
    """SceneOptions from the simulator's parameter values (see sim.parameters)."""
    n = model.n
    return SceneOptions(
        timestep=h, integrator=values.get("integrator", "rk4"),
        viscous=np.array(per_joint(values.get("viscous_friction"), n, model.viscous)),
        coulomb=np.array(per_joint(values.get("coulomb_friction"), n, model.coulomb)),
        floor=bool(values.get("floor", True)), floor_height=float(values.get("floor_height", 0.0)),
        collision_radius=float(values.get("collision_radius", 0.04)),
        obstacle_size=_vector(values, "obstacle_size"),
        obstacle_position=_vector(values, "obstacle_position", (0.5, 0.0, 0.2)),
        obstacle_rpy=_vector(values, "obstacle_rpy", (0.0, 0.0, 0.0)),
        mass_factors=_vector(values, "mass_factors"), com_factors=_vector(values, "com_factors"),
        payload_link=values.get("payload_link", ""),
        payload_mass=float(values.get("payload_mass", 0.0)),
        payload_com=_vector(values, "payload_com", (0.0, 0.0, 0.0)),
        payload_radius=float(values.get("payload_radius", 0.05)))


def build_plant(urdf_xml: str, model, values: dict, h: float):
    """The plant named by ``values['plant']`` ('mujoco' or 'model') with step h (s).

    ValueError (one line) for a robot with no moving joint, and for a URDF MuJoCo
    cannot compile (naming the link: ``scene.compile_error_text``)."""
    if model.n == 0:
        joints = [f"{j.get('name')} ({j.get('type')})" for j in ET.fromstring(urdf_xml).iter("joint")]
        raise ValueError("the URDF has no moving joint (revolute, continuous or prismatic; "
                         f"its joints: {', '.join(joints) or 'none'}): nothing to simulate")
    if values.get("plant", "mujoco") == "model":
        perturbed = [k for k in ("mass_factors", "com_factors", "obstacle_size")
                     if values.get(k) is not None and len(values[k])]
        if perturbed or values.get("payload_link"):
            raise ValueError(f"plant 'model' has no scene or perturbations; unset "
                             f"{perturbed or ['payload_link']} or use plant 'mujoco'")
        n = model.n
        return ModelPlant(model, per_joint(values.get("viscous_friction"), n, model.viscous),
                          per_joint(values.get("coulomb_friction"), n, model.coulomb),
                          values.get("coulomb_velocity", 0.1), values.get("integrator", "rk4"),
                          h)
    return MujocoPlant(urdf_xml, model, scene_options(values, model, h))
