"""tau (n,) in model order from a joint state's ``effort`` (times the drive gains, when the
node has any: ``tau_i = k_i * effort_i``, N m/A x A), with the name permutation
validated once per name list, and read once per state however many listeners ask (ROS-free:
``msg`` needs ``name`` and ``effort``).

``RobotModel.vector_from_names`` validates names and values (duplicates, missing joints,
lengths, non-finite values, each named in its InputError) but builds its index on every
call: tens of microseconds per state at 1 kHz. :class:`EffortReader` calls it on the first
message of each name list (and on any message that fails the cheap checks, so the error is
the same), and otherwise gathers ``effort`` with the cached index. The dynamics node hands
one reader to every state listener that needs tau (the contact outputs, the payload
service): the second asking for the same message gets the first one's tau, until the node
calls :meth:`EffortReader.forget` after the state.
"""
from __future__ import annotations

import numpy as np

from manip_dynamics.core.contact.observer import finite_vector

NAME_CACHE_SIZE = 16          # distinct joint name lists remembered (a driver sends one or two)


class EffortReader:
    """``reader(model, msg, gain=None)`` -> tau (n,) float64 in model order, ``gain * effort``
    (gain: (n,) in model order, the snapshot's ``drive_gain``; None: 1), or
    vector_from_names' InputError (naming the field, joint and value) for a bad message.

    The tau of the last message read is kept: the same ``msg`` object (model and gain)
    read again before :meth:`forget` returns the same array (callers copy it, never write
    it). Call ``forget`` once the message is done with (its object may be reused and
    refilled)."""

    def __init__(self):
        self._model, self._index = None, {}
        self._msg = self._tau = None      # the message read last and its tau
        self._gain = None                 # the gain that tau was scaled with

    def forget(self) -> None:
        """The next read reads ``effort`` again, whatever the message object."""
        self._msg = self._tau = None

    def __call__(self, model, msg, gain=None) -> np.ndarray:
        if msg is self._msg and model is self._model and gain is self._gain:
            return self._tau
        tau = self._read(model, msg)
        if gain is not None:
            tau = tau * gain
        self._msg, self._tau, self._gain = msg, tau, gain
        return tau

    def _read(self, model, msg) -> np.ndarray:
        """effort in model order (as measured)."""
        if self._model is not model:
            self._model, self._index = model, {}
        key = tuple(msg.name)
        index = self._index.get(key)
        if index is not None and len(msg.effort) == len(key):
            tau = np.asarray(msg.effort, dtype=np.float64)[index]
            if finite_vector(tau):
                return tau
        self._msg = self._tau = None
        tau = model.vector_from_names(msg.name, msg.effort, field="effort")   # or raises
        if index is None:
            where = {name: i for i, name in enumerate(key)}
            if len(self._index) >= NAME_CACHE_SIZE:
                self._index.clear()
            self._index[key] = np.array([where[j] for j in model.joint_names], dtype=np.intp)
        return tau
