"""Inertial parameter identification: from a recording of (t, q, qd, tau) to an identified URDF.

Holds: the joint-torque regressor and the base parameters (:mod:`.regressor`); excitation
trajectories (:mod:`.excitation`); filtering, the least-squares fit, predicted torques and
the identified URDF (:mod:`.pipeline`); the physically consistent fit, a semidefinite
program (:mod:`.consistent_fit`); payload estimation at a frame (:mod:`.payload`); drive
gains (N m/A) and a load from a run without and one with a known load (:mod:`.drive_gains`); argument
checks of these entry points (:mod:`.arguments`); rosbag2 MCAP joint-state recordings, the
input this folder reads and the recorder node writes (:mod:`.recording`, no rclpy); CSV
logs of a real arm's logger, read into the same log (:mod:`.csv_log`); the nearest real
body to an estimate that is none, for the written URDF (:mod:`.real_body`); a model's
held-out errors, RMS and rre per joint (:mod:`.validation`).

May import: numpy, scipy, :mod:`manip_dynamics.core.dynamics`,
:mod:`manip_dynamics.core.errors`, and through :mod:`manip_dynamics.core.extras` cvxpy (the
consistent fit) and mcap (recordings). Never contact, rules, nodes or rclpy.
"""
from .excitation import FourierTrajectory, optimize_excitation
from .payload import PayloadEstimate, estimate_payload
from .pipeline import Identification, Samples, filter_recording, identified_urdf, identify
from .regressor import (BaseParameters, base_parameters, frame_regressor, joint_torque_regressor,
                        model_parameters, parameter_names)

__all__ = ["BaseParameters", "base_parameters", "frame_regressor", "joint_torque_regressor",
           "model_parameters", "parameter_names", "Identification", "Samples",
           "filter_recording", "identified_urdf", "identify", "FourierTrajectory",
           "optimize_excitation", "PayloadEstimate", "estimate_payload"]
