"""The demos: three real ROS 2 processes (MuJoCo plant, dynamics node, controller) on loopback.

Holds: the closed-loop demo, its phases, recording and figures (:mod:`.closed_loop`); the
scenario (start pose, amplitudes, contact obstacle) chosen from any arm's model
(:mod:`.scenario`); the identification demo, from a URDF and a simulated arm with the wrong
masses to an identified URDF (:mod:`.identification`).

May import: anything of the package (core, rules, sim, nodes as processes) and the optional
libraries through :mod:`manip_dynamics.core.extras` (mujoco, matplotlib, PIL). Nothing
imports this folder except its entry points: ``python -m manip_dynamics.demo`` and
``python -m manip_dynamics.demo_identification`` (thin modules at the package's top) and
the launch files (test/test_layering.py).
"""
