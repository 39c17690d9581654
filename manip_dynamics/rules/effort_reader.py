"""tau (n,) in model order from a joint state's ``effort``, with the name permutation
validated once per name list (ROS-free: ``msg`` needs ``name`` and ``effort``).

``RobotModel.vector_from_names`` validates names and values (duplicates, missing joints,
lengths, non-finite values, each named in its InputError) but builds its index on every
call: tens of microseconds per state at 1 kHz. :class:`EffortReader` calls it on the first
message of each name list (and on any message that fails the cheap checks, so the error is
the same), and otherwise gathers ``effort`` with the cached index.
"""
from __future__ import annotations

import numpy as np

from manip_dynamics.core.contact.observer import finite_vector

NAME_CACHE_SIZE = 16          # distinct joint name lists remembered (a driver sends one or two)


class EffortReader:
    """``reader(model, msg)`` -> tau (n,) float64 in model order, or vector_from_names'
    InputError (naming the field, joint and value) for a bad message."""

    def __init__(self):
        self._model, self._index = None, {}

    def __call__(self, model, msg) -> np.ndarray:
        if self._model is not model:
            self._model, self._index = model, {}
        key = tuple(msg.name)
        index = self._index.get(key)
        if index is not None and len(msg.effort) == len(key):
            tau = np.asarray(msg.effort, dtype=np.float64)[index]
            if finite_vector(tau):
                return tau
        tau = model.vector_from_names(msg.name, msg.effort, field="effort")   # or raises
        if index is None:
            where = {name: i for i, name in enumerate(key)}
            if len(self._index) >= NAME_CACHE_SIZE:
                self._index.clear()
            self._index[key] = np.array([where[j] for j in model.joint_names], dtype=np.intp)
        return tau
