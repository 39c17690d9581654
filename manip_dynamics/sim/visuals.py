"""The URDF's ``<visual>`` geometry added to a MuJoCo spec, for pictures only.

The plant (:mod:`manip_dynamics.sim.scene`) drops every ``<visual>`` and collides with
capsules. For the demo's renders, :func:`add_visuals` puts the visual shapes back onto the
bodies: boxes, cylinders, spheres, and meshes MuJoCo can read (STL, OBJ) whose
``package://`` / relative file names resolve (:func:`manip_dynamics.core.dynamics.description.
resolve_package_uri`). They carry no mass and collide with nothing. Frames: each visual's
``<origin xyz rpy>`` in its link's frame (rpy: fixed-axis X, Y, Z, as URDF); m.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import mujoco
import numpy as np

from manip_dynamics.core.dynamics.description import resolve_package_uri
from manip_dynamics.core.errors import URDFError

MESH_SUFFIXES = (".stl", ".obj")
GREY = [0.75, 0.75, 0.78, 1.0]


def _floats(text, default):
    return [float(x) for x in text.split()] if text else list(default)


def _pose(visual):
    origin = visual.find("origin")
    xyz = _floats(origin.get("xyz") if origin is not None else None, (0, 0, 0))
    rpy = _floats(origin.get("rpy") if origin is not None else None, (0, 0, 0))
    quat = np.zeros(4)
    mujoco.mju_euler2Quat(quat, np.asarray(rpy, dtype=float), "XYZ")
    return xyz, quat


def _shape(spec, geometry, name, package_paths, base_dir):
    """(geom keyword arguments, '') or (None, why this visual is left out)."""
    G = mujoco.mjtGeom
    box, cyl, sph, mesh = (geometry.find(t) for t in ("box", "cylinder", "sphere", "mesh"))
    if box is not None:
        return dict(type=G.mjGEOM_BOX, size=[0.5 * v for v in _floats(box.get("size"),
                                                                       (0, 0, 0))]), ""
    if cyl is not None:
        return dict(type=G.mjGEOM_CYLINDER, size=[float(cyl.get("radius")),
                                                  0.5 * float(cyl.get("length")), 0]), ""
    if sph is not None:
        return dict(type=G.mjGEOM_SPHERE, size=[float(sph.get("radius")), 0, 0]), ""
    if mesh is None:
        return None, f"{name}: no geometry"
    uri = mesh.get("filename", "")
    try:
        path = resolve_package_uri(uri, package_paths, base_dir)
    except URDFError as exc:
        return None, f"{uri}: {exc}"
    if path.suffix.lower() not in MESH_SUFFIXES:
        return None, f"{uri}: MuJoCo reads {'/'.join(MESH_SUFFIXES)} meshes only"
    if not path.is_file():
        return None, f"{uri}: no file {path}"
    spec.add_mesh(name=name, file=str(path.resolve()),
                  scale=_floats(mesh.get("scale"), (1, 1, 1)))
    return dict(type=G.mjGEOM_MESH, meshname=name), ""


def add_visuals(spec, urdf_xml: str, package_paths=None, base_dir=None):
    """Add the URDF's visuals to ``spec``'s bodies (no mass, no contact); -> (number added,
    list of the visuals left out, each with why)."""
    added, missing = 0, []
    for link in ET.fromstring(urdf_xml).iter("link"):
        body = spec.body(link.get("name")) or spec.worldbody
        for k, visual in enumerate(link.findall("visual")):
            geometry = visual.find("geometry")
            name = f"{link.get('name')}_visual{k}"
            kwargs, why = (_shape(spec, geometry, name, package_paths, base_dir)
                           if geometry is not None else (None, f"{name}: no geometry"))
            if kwargs is None:
                missing.append(why)
                continue
            color = visual.find("material/color")
            xyz, quat = _pose(visual)
            body.add_geom(name=name, pos=xyz, quat=quat, contype=0, conaffinity=0, mass=0.0,
                          rgba=_floats(color.get("rgba") if color is not None else None, GREY),
                          **kwargs)
            added += 1
    return added, missing
