"""The dynamics node's per-state outputs, built cheaply: reused messages, cached name matching.

One :class:`StateOutputs` is built per applied state (robot model + parameter values) and
serves every joint_states message until the next change:

* ``vectors(msg)`` -> ``(q, qd)`` in model order. The permutation name -> model index is
  computed (and the names validated: duplicates, missing joints, with the core's
  ``vector_from_names``) once per distinct ``tuple(msg.name)``; later messages with the same
  name list cost one length check and one gather per field. Finiteness is left to the
  core, which checks q and qd itself (``RobotModel._all_finite``, one branch-free pass);
  ``explain(msg)`` turns a core ``InputError`` back into the message's own words (which
  joint, which field).
* ``publish(header, q, qd, g, terms, now)`` fills and publishes the enabled outputs that
  someone subscribes to and that are due. Each output is laid out once, serialised
  (:mod:`manip_dynamics.nodes.wire`: names, frame ids, tip frame and array lengths fixed),
  and per state only its stamp and float64 values are rewritten in those bytes, which are
  published as they are: no Python message is built or serialised per state. The layouts
  are checked once against rclpy's deserialisation of the same message built field by
  field (``_fill_*``); should a middleware read them differently, the messages themselves
  are published (``raw`` False). The joint_states callback runs one at a time (its own
  mutually exclusive callback group), so the reused buffers are never shared.

Per-output switches and rate limits are the parameters ``outputs.<name>.enabled`` and
``outputs.<name>.rate`` (Hz, 0 = every state) of :mod:`manip_dynamics.rules.dynamics_parameters`;
``~/inertia_markers`` is not published from here but from a timer (``markers_due``).
"""
from __future__ import annotations

import array
from types import SimpleNamespace
from typing import Any, Mapping, Optional

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header

from manip_dynamics.core.errors import InputError
from manip_dynamics.nodes import wire
from manip_dynamics.rules.snapshot import Snapshot
from manip_dynamics_interfaces.msg import Dynamics

# the per-state outputs, in publishing order (~/dynamics first: a computed-torque
# controller waits for it), and the marker output published from a timer
PER_STATE = ("dynamics", "gravity_torques", "gravity_command", "coriolis_torques")
MARKERS = "inertia_markers"
OUTPUT_NAMES = PER_STATE + (MARKERS,)
NAME_CACHE_SIZE = 16    # distinct joint name lists remembered (a driver sends one or two)
FRAME_CACHE_SIZE = 8    # JointState output layouts (input frame_id, with velocity) kept


def f64(a) -> array.array:
    """A float64[] message field from an array: row-major flattening, as an array('d'),
    which the generated message setters take without checking element by element."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(a, dtype=np.float64).tobytes(order="C"))
    return out


class RateGate:
    """``due(now)``: True for the first state at or after each slot, the slots ``1 / rate``
    apart (so ``rate`` states per second on average, never more; rate 0: always); never
    when disabled. ``now`` is monotonic seconds. A state that is not due is simply not
    published on that output; the next due state is."""

    __slots__ = ("enabled", "period", "_next")

    def __init__(self, enabled: bool, rate: float):
        self.enabled = bool(enabled)
        self.period = 1.0 / rate if rate > 0.0 else 0.0
        self._next = -float("inf")

    def due(self, now: float) -> bool:
        if not self.enabled:
            return False
        if self.period == 0.0:
            return True
        if now < self._next:
            return False
        # keep the average rate: the next slot is one period after this one's, unless
        # this state came more than a period late (then one period from now)
        late = now - self._next
        self._next = (self._next if late < self.period else now) + self.period
        return True


class Subscribed:
    """``subscribed(now)``: someone subscribes to ``publisher`` (``now`` monotonic s).

    The middleware is asked (``get_subscription_count``, a few microseconds) on every call
    while nobody subscribes, so that a new subscriber gets the very next state; once
    somebody does, the answer is kept for ``period`` s. A subscriber that leaves is thus
    noticed up to ``period`` s late: that long, messages are published to nobody (lost,
    as a volatile message nobody subscribes to is anyway)."""

    __slots__ = ("_publisher", "_count", "_period", "_until")

    def __init__(self, publisher, period: float = 0.1):
        self._publisher, self._period = publisher, float(period)
        # the count from the publisher's rclpy handle (its public ``handle``): ~0.3 us a
        # call against ~1.3 us through Publisher.get_subscription_count, whose ``with
        # handle`` guard only defers a concurrent destroy (the node destroys its
        # publishers after its callbacks; a destroyed handle raises RCLError, as the
        # guard raises InvalidHandle)
        self._count = publisher.handle.get_subscription_count
        self._until = -float("inf")

    def __call__(self, now: float) -> bool:
        if now < self._until:
            return True
        if self._count() > 0:
            self._until = now + self._period
            return True
        return False


class StateOutputs:
    """Outputs of one applied state; see the module docstring.

    ``snapshot`` and ``values`` (the parameter values) are what the joint_states callback
    uses for this state: read ``node._outputs`` once and take both from it.
    """

    def __init__(self, snapshot: Snapshot, values: Mapping[str, Any], publishers: Mapping,
                 origin: str = ""):
        self.snapshot = snapshot
        self.values = values
        self.origin = origin
        self.max_state_age = float(values["max_state_age"])
        self.latest_wins = bool(values["joint_states_latest_wins"])
        self.backlog = int(values["joint_states_backlog"])
        self._pub = publishers
        self.gates = {name: RateGate(values[f"outputs.{name}.enabled"],
                                     values[f"outputs.{name}.rate"])
                      for name in PER_STATE}
        self._subscribed = {name: Subscribed(pub) for name, pub in publishers.items()}
        model = snapshot.model
        names = list(model.joint_names)
        self._n = model.n
        self._names_cache: dict[tuple, np.ndarray] = {}
        index = {name: i for i, name in enumerate(names)}
        self._command_index = np.array([index[j] for j in snapshot.command_joints],
                                       dtype=np.intp)
        self._gravity = JointState(name=names)
        self._coriolis = JointState(name=names)
        self._command = Float64MultiArray()
        self._dynamics = Dynamics(header=Header(frame_id=model.root_link), joint_names=names,
                                  tip_frame=snapshot.tip_frame)
        self._empty = array.array("d")
        self._dynamics_wire = wire.DynamicsWire(names, model.root_link, snapshot.tip_frame)
        self._command_wire = wire.Float64ArrayWire(len(self._command_index))
        self._joint_state_wires: dict[tuple[str, bool], wire.JointStateWire] = {}
        self.raw = self._wires_match()

    # ------------------------------------------------------------------ input

    def _index(self, msg) -> np.ndarray:
        """Model index -> position in msg.name (validated on first sight of a name list)."""
        key = tuple(msg.name)
        index = self._names_cache.get(key)
        if index is None:
            model = self.snapshot.model
            # raises InputError naming duplicates / missing joints / lengths / a bad value
            model.vector_from_names(msg.name, msg.position, field="position")
            where = {name: i for i, name in enumerate(key)}
            index = np.array([where[j] for j in model.joint_names], dtype=np.intp)
            if len(self._names_cache) >= NAME_CACHE_SIZE:
                self._names_cache.clear()
            self._names_cache[key] = index
        return index

    def vectors(self, msg) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """(q, qd) in model order from a JointState (qd None when ``velocity`` is empty).

        Raises InputError for a message whose name list does not fit the model or whose
        field lengths differ from the name list's; values are not checked for finiteness
        here (the core does it: call :meth:`explain` on its InputError)."""
        index = self._index(msg)
        n_names = len(msg.name)
        if len(msg.position) != n_names:
            raise InputError(f"position: {n_names} names but {len(msg.position)} values")
        q = np.asarray(msg.position, dtype=np.float64)[index]
        if not len(msg.velocity):
            return q, None
        if len(msg.velocity) != n_names:
            raise InputError(f"velocity: {n_names} names but {len(msg.velocity)} values")
        return q, np.asarray(msg.velocity, dtype=np.float64)[index]

    def explain(self, msg, exc: InputError) -> InputError:
        """The core refused q or qd (a NaN or inf): the same problem in the message's
        words, from ``vector_from_names`` (names the field, the joint and the value)."""
        model = self.snapshot.model
        try:
            model.vector_from_names(msg.name, msg.position, field="position")
            if len(msg.velocity):
                model.vector_from_names(msg.name, msg.velocity, field="velocity")
        except InputError as named:
            return named
        return exc

    # ------------------------------------------------------------------ output

    def _due(self, name: str, now: float) -> bool:
        """Enabled, subscribed to (a volatile message nobody subscribes to is lost anyway:
        not building and serialising it saves ~20 us per output; :class:`Subscribed`),
        and due by its rate."""
        gate = self.gates[name]
        return gate.enabled and self._subscribed[name](now) and gate.due(now)

    def publish(self, header: Header, q, qd, g, terms, now: float) -> None:
        """Publish the enabled, subscribed, due outputs of one state (``qd`` and ``terms``
        None for a position-only state: ~/dynamics and ~/coriolis_torques are then not
        published). ``header`` is the input's; ``now`` monotonic seconds (rate limits)."""
        joint_state = self._joint_state_wire(header.frame_id, qd) if self.raw else None
        if not self.raw:
            self._publish_messages(header, q, qd, g, terms, now)
            return
        due, pub = self._due, self._pub
        if terms is not None and due("dynamics", now):
            cond, near = self._condition(terms)
            pub["dynamics"].publish(self._dynamics_wire.fill(header.stamp, q, qd, g, terms,
                                                             cond, near))
        if due("gravity_torques", now):
            pub["gravity_torques"].publish(joint_state.fill(header.stamp, q, qd, g))
        if due("gravity_command", now):
            pub["gravity_command"].publish(self._command_wire.fill(g[self._command_index]))
        if terms is not None and due("coriolis_torques", now):
            pub["coriolis_torques"].publish(joint_state.fill(header.stamp, q, qd, terms.c))

    def publish_messages(self, header: Header, q, qd, g, terms, now: float) -> None:
        """``publish`` through Python messages whatever ``raw`` says: for terms whose sizes
        the serialised layouts do not hold (a singular M: Lambda and A empty)."""
        self._publish_messages(header, q, qd, g, terms, now)

    def _publish_messages(self, header: Header, q, qd, g, terms, now: float) -> None:
        """``publish`` with Python messages (a middleware that reads the layouts otherwise)."""
        due, pub = self._due, self._pub
        if terms is not None and due("dynamics", now):
            pub["dynamics"].publish(self._fill_dynamics(header, q, qd, g, terms))
        if due("gravity_torques", now):
            pub["gravity_torques"].publish(self._fill_joint_state(self._gravity, header, q,
                                                                  qd, g))
        if due("gravity_command", now):
            self._command.data = f64(g[self._command_index])
            pub["gravity_command"].publish(self._command)
        if terms is not None and due("coriolis_torques", now):
            pub["coriolis_torques"].publish(self._fill_joint_state(self._coriolis, header, q,
                                                                   qd, terms.c))

    # ------------------------------------------------------------------ serialised layouts

    def _joint_state_wire(self, frame_id: str, qd) -> wire.JointStateWire:
        """The JointState layout for outputs of an input with this frame_id (copied to
        the outputs' headers) and with / without velocities; built and checked on first
        use (``raw`` turns False if it does not read back)."""
        key = (frame_id, qd is not None)
        layout = self._joint_state_wires.get(key)
        if layout is None:
            layout = wire.JointStateWire(self._gravity.name, frame_id, qd is not None)
            if len(self._joint_state_wires) >= FRAME_CACHE_SIZE:
                self._joint_state_wires.clear()
            self._joint_state_wires[key] = layout
            self.raw = self.raw and self._joint_state_matches(layout, frame_id, qd is not None)
        return layout

    def _probe(self):
        """A made-up state for the layout checks: (header, q, qd, g, terms) with distinct
        values in every entry, a stamp with both fields set."""
        n = self._n
        shapes = [(n,), (n,), (n,), (n,), (n, n), (6, n), (6, 6), (6, 6)]
        sizes = [int(np.prod(shape)) for shape in shapes]
        values = np.sin(np.arange(1.0, 1.0 + sum(sizes))) * 7.3
        q, qd, g, c, M, J, Lambda, A = (
            part.reshape(shape)
            for part, shape in zip(np.split(values, np.cumsum(sizes)[:-1]), shapes))
        header = Header()
        header.stamp.sec, header.stamp.nanosec = 1_700_000_123, 987_654_321
        terms = SimpleNamespace(c=c, M=M, J=J, Lambda=Lambda, A=A, condition_number=1234.5,
                                singular=False)
        return header, q, qd, g, terms

    def _joint_state_matches(self, layout, frame_id: str, with_velocity: bool) -> bool:
        header, q, qd, g, _ = self._probe()
        header.frame_id = frame_id
        qd = qd if with_velocity else None
        expected = self._fill_joint_state(JointState(name=self._gravity.name), header, q, qd, g)
        return wire.matches(layout.fill(header.stamp, q, qd, g), expected)

    def _wires_match(self) -> bool:
        """The Dynamics and Float64MultiArray layouts read back as the messages built
        field by field; so do the JointState layouts of an input without a frame_id."""
        header, q, qd, g, terms = self._probe()
        cond, near = self._condition(terms)
        dynamics = wire.matches(self._dynamics_wire.fill(header.stamp, q, qd, g, terms, cond,
                                                         near),
                                self._fill_dynamics(header, q, qd, g, terms))
        command = wire.matches(self._command_wire.fill(g[self._command_index]),
                               Float64MultiArray(data=f64(g[self._command_index])))
        self.raw = dynamics and command
        for with_velocity in (True, False):
            self._joint_state_wire("", qd if with_velocity else None)
        return self.raw

    def _fill_joint_state(self, msg: JointState, header: Header, q, qd, effort) -> JointState:
        msg.header.stamp = header.stamp
        msg.header.frame_id = header.frame_id
        msg.position = f64(q)
        msg.velocity = self._empty if qd is None else f64(qd)
        msg.effort = f64(effort)
        return msg

    def _condition(self, terms) -> tuple[float, bool]:
        """(condition number, near_singular) of ~/dynamics for the core's terms."""
        cond = float(terms.condition_number)
        return cond, bool(terms.singular) or cond > self.snapshot.singular_condition

    def _fill_dynamics(self, header: Header, q, qd, g, terms) -> Dynamics:
        msg = self._dynamics
        cond, near = self._condition(terms)
        msg.header.stamp = header.stamp
        msg.position, msg.velocity = f64(q), f64(qd)
        msg.gravity, msg.coriolis = f64(g), f64(terms.c)
        msg.mass_matrix = f64(terms.M)
        msg.jacobian = f64(terms.J)
        msg.effective_inertia = f64(terms.Lambda)
        msg.inverse_effective_inertia = f64(terms.A)
        msg.condition_number = cond
        msg.near_singular = near
        return msg
