"""Offscreen pictures of the simulated arm: PNG frames and an animated GIF (no display).

MuJoCo's ``Renderer`` draws the plant's scene (capsules along the links, floor, obstacle)
with OpenGL through EGL (``MUJOCO_GL=egl``, set by ``manip_dynamics.sim`` unless already
chosen; Debian: libegl1, libegl-mesa0, libgl1-mesa-dri, libopengl0, installed by
``make setup-render``) or OSMesa (``MUJOCO_GL=osmesa``, libosmesa6). Where neither works,
:func:`open_renderer` returns the reason instead of raising, and callers go on without
pictures.

States are replayed: ``render_states`` sets q (core joint order), runs MuJoCo's forward
kinematics only, and renders from a fixed free camera.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manip_dynamics.core.extras import import_extra

mujoco = import_extra("mujoco", __name__)


@dataclass
class Camera:
    """A free camera: looks at ``lookat`` (m, root frame) from ``distance`` (m), azimuth and
    elevation in degrees (MuJoCo's convention: azimuth 90 looks along +y)."""
    lookat: tuple = (0.2, 0.0, 0.35)
    distance: float = 1.7
    azimuth: float = 135.0
    elevation: float = -18.0

    def mjv(self) -> mujoco.MjvCamera:
        cam = mujoco.MjvCamera()
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.lookat[:] = self.lookat
        cam.distance, cam.azimuth, cam.elevation = self.distance, self.azimuth, self.elevation
        return cam


def open_renderer(m: mujoco.MjModel, width: int = 400, height: int = 300):
    """(Renderer, '') or (None, why rendering is unavailable here)."""
    try:
        return mujoco.Renderer(m, height=height, width=width), ""
    except Exception as err:     # no EGL/OSMesa library, no device: say so, never fail
        return None, f"{type(err).__name__}: {err}".splitlines()[0][:200]


def render_states(renderer, m, qadr, states, camera: Camera) -> list:
    """One RGB frame (height, width, 3) uint8 per q in ``states`` ((N, n), core order)."""
    d = mujoco.MjData(m)
    cam = camera.mjv()
    frames = []
    for q in states:
        d.qpos[qadr] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_camlight(m, d)
        renderer.update_scene(d, camera=cam)
        frames.append(renderer.render().copy())
    return frames


def _labelled(frame, label):
    Image = import_extra("PIL.Image", __name__)
    ImageDraw = import_extra("PIL.ImageDraw", __name__)
    image = Image.fromarray(frame)
    if label:
        draw = ImageDraw.Draw(image)
        draw.rectangle([0, 0, image.width, 22], fill=(255, 255, 255))
        draw.text((8, 5), label, fill=(0, 0, 0))
    return image


def save_png(frame, path, label=""):
    _labelled(frame, label).save(path)


def save_gif(frames, labels, path, fps: float = 10.0):
    """Animated GIF (loops) of ``frames`` with a caption per frame."""
    images = [_labelled(f, lab).convert("P", palette=1, colors=128)   # 1: adaptive palette
              for f, lab in zip(frames, labels)]
    images[0].save(path, save_all=True, append_images=images[1:], loop=0,
                   duration=int(round(1000 / fps)), optimize=True)


def montage(frames, labels, columns: int):
    """Frames side by side (``columns`` per row) with captions, as one RGB array."""
    tiles = [np.asarray(_labelled(f, lab)) for f, lab in zip(frames, labels)]
    h, w = tiles[0].shape[:2]
    rows = -(-len(tiles) // columns)
    sheet = np.full((rows * h, columns * w, 3), 255, dtype=np.uint8)
    for k, tile in enumerate(tiles):
        r, c = divmod(k, columns)
        sheet[r * h:(r + 1) * h, c * w:(c + 1) * w] = tile
    return sheet
