"""The dynamics node's contact calibration: ``~/calibrate_contact``, ``~/contact_calibration``.

On a real arm the momentum observer's residual r carries the model's errors (friction,
drive gains, velocity noise): fixed thresholds either fire on free motion or miss pushes.
A calibration learns, from a stretch of live contact-free motion, a per-joint bias and
thresholds (the core's :func:`~manip_dynamics.core.contact.calibration.calibrate_contact`:
constants, and coefficients of thresholds that follow the motion), and the node applies
them (``observer.thresholds``: ``motion``, ``calibrated`` or ``fixed``)::

    ~/calibrate_contact     manip_dynamics_interfaces/CalibrateContact  (the services' thread)
    ~/contact_calibration   manip_dynamics_interfaces/ContactCalibration  (reliable, transient
                                                     local: the calibration in force, on change)

A request collects every sample the observer integrates over the next ``duration`` s of
joint-state stamps (``rules.calibration_run``; the contact outputs' state listener adds
them), learns, applies, publishes and, with ``save``, writes ``<name>.contact.yaml``
beside ``urdf_file`` (``core.contact.calibration.calibration_file_beside``). That file,
when it exists, is loaded with the robot model (and a model whose joints differ drops
the calibration with an error line). ``contact.calibration.startup_duration`` > 0 runs
the same once at start-up (learned on a thread of its own; refusals are logged).

Refusals (``success: false`` and one line; the node keeps running): a duration not finite,
<= 0 or above 600 s; another calibration collecting; no robot model or observer.enabled
false; no joint state with effort and velocities for ``STALL_TIMEOUT`` s of wall clock
while collecting; the robot model changing or the stamps going back meanwhile; and the
core's: a stretch too short, too still or looking like contact.
"""
from __future__ import annotations

import threading
import time
import traceback
from collections import namedtuple
from pathlib import Path

from builtin_interfaces.msg import Time
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from manip_dynamics.core.contact.calibration import (calibrate_contact, calibration_file_beside,
                                                     load_calibration, save_calibration)
from manip_dynamics.core.errors import InputError, ManipDynamicsError
from manip_dynamics.rules.calibration_run import CalibrationRun
from manip_dynamics.nodes.service_thread import ServiceThread
from manip_dynamics.nodes.services import guarded_answer
from manip_dynamics.rules.contact_monitor import per_joint
from manip_dynamics_interfaces.msg import ContactCalibration
from manip_dynamics_interfaces.srv import CalibrateContact

SERVICE = "~/calibrate_contact"
TOPIC = "~/contact_calibration"
STALL_TIMEOUT = 5.0        # s of wall clock without a collected sample: the run is given up
MOTION_TERMS = ("rest", "speed", "accel", "band")   # ContactCalibration's threshold terms

InForce = namedtuple("InForce", "calibration source path stamp")
InForce.__doc__ = """The contact calibration in force: the core's ContactCalibration, its
source ("service", "startup", "file"), the file it came from or was saved to ('' if
none) and the stamp (sec, nanosec) of the last state it was learned from (None: loaded)."""


class ContactCalibrationService:
    """``~/calibrate_contact``, ``~/contact_calibration`` and the start-up calibration of one
    DynamicsNode (module docstring). ``state()``: the node's ``Applied`` state; ``outputs``:
    its ContactOutputs (collects the runs' samples, applies the calibration). The service
    is answered on a thread of its own (a ServiceThread of two threads, hidden node
    ``_<node>_calibration``): a call waits while the states are collected, and a second
    call is refused meanwhile, not queued; ``start()`` once the node is built (a node
    whose construction fails has no thread to stop: rclpy's context then destroys it
    holding the context's lock, which a running thread's spin waits for), ``stop()``
    before the node is destroyed."""

    def __init__(self, node, outputs, state, startup_duration: float = 0.0):
        self.node, self._outputs, self._state = node, outputs, state
        self.host = ServiceThread(node, "calibration", threads=2)
        self._busy = threading.Lock()        # one service request collecting at a time
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub = node.create_publisher(ContactCalibration, TOPIC, latched)
        self.service = self.host.create_service(CalibrateContact, SERVICE, self.on_request)
        outputs.on_run_complete = self._on_run_complete
        if startup_duration > 0:
            outputs.start_run(CalibrationRun(startup_duration, "startup"))
            node.get_logger().info(
                f"contact calibration at start-up: learning from the first "
                f"{startup_duration:g} s of joint states with effort (keep the arm moving "
                "freely, without contact)")

    def start(self) -> None:
        """Answer the service from now on (its thread starts)."""
        self.host.start()

    def stop(self) -> None:
        """End the service's thread (and a request waiting for states)."""
        run = self._outputs.run
        if run is not None:
            run.abandon("the node is shutting down")
        self.host.stop()

    # ------------------------------------------------------------------ file
    def load_beside(self, state) -> None:
        """For a new robot model (``state``: the node's Applied): the calibration file
        beside ``urdf_file`` when it exists, else keep the one in force (dropped with an
        error line by the contact outputs if it does not fit the new model)."""
        path = self._file(state)
        if path is None or not path.is_file():
            return
        try:
            calibration = load_calibration(path, state.snapshot.model.joint_names)
        except ManipDynamicsError as exc:
            self.node.get_logger().error(f"contact calibration file not used: {exc}")
            return
        self._make_in_force(InForce(calibration, "file", str(path), None), apply=False)
        self.node.get_logger().info(f"contact calibration loaded from {path}")

    @staticmethod
    def _file(state):
        """The calibration file of ``state`` (beside urdf_file), or None."""
        if state is None or state.snapshot is None or not state.values.get("urdf_file"):
            return None
        if state.values.get("robot_description"):      # (the parameter takes precedence)
            return None
        return calibration_file_beside(state.values["urdf_file"])

    # ------------------------------------------------------------------ service
    def on_request(self, request, response):
        guarded_answer(self.node, SERVICE, self._answer, request, response)
        if not response.success:
            self.node.get_logger().warning(response.message)
        return response

    def _answer(self, request, response) -> None:
        run = CalibrationRun(request.duration, "service")    # InputError: a bad duration
        state = self._state()
        if state.snapshot is None:
            raise InputError("no robot model yet")
        if not state.snapshot.observer.enabled:
            raise InputError("the observer is off (observer.enabled false)")
        if not self._busy.acquire(blocking=False):
            raise InputError("another calibration is collecting; call again when it ended")
        try:
            if not self._outputs.start_run(run):
                raise InputError("another calibration (the start-up one) is collecting")
            try:
                self._wait(run)
            finally:
                self._outputs.stop_run(run)
            in_force = self._learn(run, state)
        finally:
            self._busy.release()
        self._outputs.set_calibration(in_force)   # InputError: it does not fit the observer
        response.saved, note = False, ""
        if request.save:
            response.saved, note = self._save(in_force, state)
            if response.saved:
                in_force = in_force._replace(path=note)
                note = f"; saved to {note}"
        response.calibration = self._message(in_force)
        self.pub.publish(response.calibration)
        response.success = True
        response.message = self._summary(in_force) + note

    def _wait(self, run) -> None:
        """Until ``run`` finished; given up after STALL_TIMEOUT s of wall clock without a
        new sample. InputError with the reason when it did not complete."""
        last_count, last_change = 0, time.monotonic()
        while not run.wait(0.1):
            if run.count != last_count:
                last_count, last_change = run.count, time.monotonic()
            elif time.monotonic() - last_change > STALL_TIMEOUT:
                run.abandon(f"no joint state with effort and velocities for {STALL_TIMEOUT:g} "
                            f"s (collected {run.span:.2f} of {run.duration:g} s, "
                            f"{run.count} states)")
        if not run.complete:
            raise InputError(f"calibration not done: {run.reason}")

    def _learn(self, run, state) -> InForce:
        """The core's calibration of ``run``'s samples (InputError: refused, why)."""
        t, _, qd, r = run.samples()
        model = state.snapshot.model
        gains = per_joint(state.snapshot.observer.gains, model.n, "observer.gains")
        calibration = calibrate_contact(t, qd, r, run.joint_names, gains)
        return InForce(calibration, run.source, "", run.last_stamp)

    def _on_run_complete(self, run) -> None:
        """A run completed (the state listener's thread): the start-up run is learned on a
        thread of its own (the states go on); a service run is the waiting request's."""
        if run.source != "startup":
            return
        threading.Thread(target=self._startup, args=(run,), name="contact_calibration",
                         daemon=True).start()

    def _startup(self, run) -> None:
        log = self.node.get_logger()
        try:
            in_force = self._learn(run, self._state())
            self._make_in_force(in_force, apply=True)
            log.info(f"contact calibration at start-up: {self._summary(in_force)}")
        except ManipDynamicsError as exc:
            log.error(f"contact calibration at start-up refused: {exc}; the observer "
                      "keeps observer.enter_thresholds (calibrate with ~/calibrate_contact)")
        except Exception:
            log.error("contact calibration at start-up failed:\n" + traceback.format_exc())

    def _save(self, in_force, state):
        """(True, path) with the calibration written beside urdf_file, or (False, why)."""
        path = self._file(state)
        if path is None:
            return False, ("; not saved: the robot model does not come from urdf_file (no "
                           "file to save beside)")
        try:
            save_calibration(path, in_force.calibration,
                             comment=f"learned by {self.node.get_fully_qualified_name()} "
                                     f"from {in_force.calibration.duration:.2f} s of motion")
        except OSError as exc:
            return False, f"; not saved: cannot write {path}: {exc.strerror}"
        return True, str(path)

    def _make_in_force(self, in_force, apply: bool) -> None:
        """Hand ``in_force`` to the contact outputs (``apply``: now, InputError if it does not
        fit the running observer; else from the next observer on) and publish it."""
        if apply:
            self._outputs.set_calibration(in_force)
        else:
            self._outputs.calibration = in_force
        self.pub.publish(self._message(in_force))

    # ------------------------------------------------------------------ messages
    def _message(self, in_force) -> ContactCalibration:
        """~/contact_calibration of ``in_force`` (msg/ContactCalibration.msg)."""
        c = in_force.calibration
        msg = ContactCalibration(source=in_force.source, path=in_force.path,
                                 joint_names=list(c.joint_names), bias=list(c.bias),
                                 enter_thresholds=list(c.constant),
                                 motion_terms=list(MOTION_TERMS),
                                 motion_coefficients=[c.margin * x for term in MOTION_TERMS
                                                      for x in getattr(c, term)],
                                 duration=float(c.duration), samples=int(c.samples))
        if in_force.stamp is not None:
            msg.header.stamp = Time(sec=int(in_force.stamp[0]), nanosec=int(in_force.stamp[1]))
        else:
            msg.header.stamp = self.node.get_clock().now().to_msg()
        return msg

    @staticmethod
    def _summary(in_force) -> str:
        c = in_force.calibration
        return (f"contact calibration from {c.duration:.2f} s ({c.samples} states): bias ["
                + ", ".join(f"{x:.3g}" for x in c.bias) + "], enter thresholds ["
                + ", ".join(f"{x:.3g}" for x in c.constant) + "] N*m")


__all__ = ["ContactCalibrationService", "InForce", "SERVICE", "TOPIC"]
