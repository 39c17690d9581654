"""The demos: three real ROS 2 processes (MuJoCo plant, dynamics node, controller) on loopback.

Holds: the closed-loop demo's command line and embedded robots (:mod:`.closed_loop`) and its
pieces, which the "your own arm" run (``--urdf``) uses as they are: the node processes and
the Recorder node (:mod:`.processes`, shared with the identification demo), the phase
table and playing it (:mod:`.phases`), numbers and tables (:mod:`.analysis`), figures and
MuJoCo pictures (:mod:`.plots`); the scenario (start pose, amplitudes, contact obstacle)
chosen from any arm's model (:mod:`.scenario`); the identification demo, from a URDF and a
simulated arm with the wrong masses to an identified URDF (:mod:`.identification`).

May import: anything of the package (core, rules, sim, nodes as processes) and the optional
libraries through :mod:`manip_dynamics.core.extras` (mujoco, matplotlib, PIL). Nothing
imports this folder except its entry points: ``python -m manip_dynamics.demo`` and
``python -m manip_dynamics.demo_identification`` (thin modules at the package's top) and
the launch files (test/test_layering.py).
"""
