"""ROS-free simulated plants for ``arm_simulator`` (the node only translates messages).

* :mod:`.scene`       URDF -> MuJoCo model (limits, damping, friction loss, one torque motor
                      per joint, capsules along the links, floor, obstacle, perturbations).
* :mod:`.mujoco_plant` the MuJoCo plant: fixed steps, wrenches, true external torques.
* :mod:`.model_plant` the model-matched plant: RK4 on the core's own forward dynamics
                      (``plant: model``; exact by construction, for tests of the plumbing).
* :mod:`.commands`    the command rules (latest valid command, timeout, lockstep answer).
* :mod:`.parameters`  the simulator's parameter table (name, type, default, bounds) and checks.
* :mod:`.render`      offscreen pictures (PNG frames, animated GIF) of recorded states.

Importing this package selects EGL for MuJoCo's offscreen rendering unless ``MUJOCO_GL``
is already set (it must be chosen before ``mujoco`` is first imported; EGL needs no
display).
"""
import os

os.environ.setdefault("MUJOCO_GL", "egl")
