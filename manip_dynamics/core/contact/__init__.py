"""Contact awareness: the external torques an arm feels, and where and how hard it is touched.

Holds: the generalized-momentum observer r ~ tau_ext and its discretisation
(:mod:`.observer`); from its residual, the tip wrench, per-joint detection with hysteresis,
isolation of the most distal significantly loaded joint (its link and the
candidate links a contact there may lie on) and the contact point along it
(:mod:`.detector`); thresholds learned from a contact-free stretch and thresholds that
follow the motion (:mod:`.calibration`).

May import: numpy, numba, scipy (calibration's linear programme), PyYAML (on use),
:mod:`manip_dynamics.core.dynamics` (the model, the Cholesky and eigenvalue kernels),
:mod:`manip_dynamics.core.errors` and :mod:`manip_dynamics.core.extras`. Never identification, rules or
nodes (the node's contact outputs live in :mod:`manip_dynamics.nodes`).
"""
from .calibration import (THRESHOLD_MODES, ContactCalibration, MotionThresholds,
                          calibrate_contact, calibration_file_beside, load_calibration,
                          save_calibration)
from .detector import (ArmTopology, ContactDetector, ContactPoint, ContactState, WrenchEstimate,
                       arm_topology, contact_point, joint_candidates, tip_wrench)
from .observer import MomentumObserver, ObserverStep

__all__ = ["MomentumObserver", "ObserverStep", "ContactDetector", "ContactState",
           "ContactPoint", "WrenchEstimate", "ArmTopology", "arm_topology", "contact_point",
           "joint_candidates", "tip_wrench", "ContactCalibration", "MotionThresholds",
           "THRESHOLD_MODES", "calibrate_contact", "calibration_file_beside",
           "load_calibration", "save_calibration"]
