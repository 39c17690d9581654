"""The human body model of ISO/TS 15066 Annex A, read from a YAML file the user can edit.

A :class:`BodyRegion` holds, in SI units, what the transient-contact speed limit of
:mod:`.limits` needs: the region's effective mass m_H (kg), its spring constant k (N/m),
its maximum permissible quasi-static force F_s (N) and pressures p_s (Pa) per specific
area, and the transient factor (F_T = factor * F_s; None where the standard does not
permit transient contact: skull, forehead, face).

The packaged table is ``iso_ts_15066.yaml`` beside this module (Tables A.2 and A.3 of
ISO/TS 15066:2016, cited there table by table); the file gives k in N/mm and p in N/cm^2,
as the standard prints them.
"""
from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass

from ..core.errors import InputError
from ..core.extras import import_extra

DEFAULT_BODY_MODEL = pathlib.Path(__file__).with_name("iso_ts_15066.yaml")

N_PER_MM = 1e3          # spring constants: N/mm -> N/m
PA_PER_N_CM2 = 1e4      # pressures: N/cm^2 -> Pa


@dataclass(frozen=True)
class BodyRegion:
    """One body region. effective_mass m_H (kg), spring_constant k (N/m), force F_s (N),
    transient_factor (F_T / F_s and p_T / p_s; None: transient contact not permissible),
    areas: specific area -> p_s (Pa)."""
    key: str
    name: str
    effective_mass: float
    spring_constant: float
    force: float
    transient_factor: float | None
    areas: dict

    def transient_force(self):
        """F_T = transient_factor * F_s (N); 0 where transient contact is not permissible."""
        return 0.0 if self.transient_factor is None else self.transient_factor * self.force

    def pressure(self, area=None, transient=True):
        """p (Pa) of ``area`` (default: the region's lowest, the most restrictive), transient
        (p_T = factor * p_s; 0 if not permissible) or quasi-static p_s."""
        if area is None:
            p = min(self.areas.values())
        elif area in self.areas:
            p = self.areas[area]
        else:
            raise InputError(f"body region {self.key!r} has no area {area!r}; its areas: "
                             f"{', '.join(sorted(self.areas))}")
        if not transient:
            return p
        return 0.0 if self.transient_factor is None else self.transient_factor * p


class BodyModel:
    """The body regions of one table: ``model[key]`` -> BodyRegion, ``keys()``."""

    def __init__(self, regions, source="", standard=""):
        self._regions = dict(regions)
        self.source = source
        self.standard = standard

    def __getitem__(self, key):
        try:
            return self._regions[key]
        except (KeyError, TypeError):
            raise InputError(f"unknown body region {key!r}; regions in {self.source or 'the body model'}: "
                             f"{', '.join(self._regions)}") from None

    def __contains__(self, key):
        return key in self._regions

    def keys(self):
        return tuple(self._regions)

    @classmethod
    def load(cls, path=None):
        """Read a body-model YAML (default: the packaged ISO/TS 15066 table). Every value is
        checked (finite, > 0; factor >= 1 or null); errors name the file, region and field."""
        yaml = import_extra("yaml", __name__)     # (PyYAML: only to read a body model)
        path = pathlib.Path(path) if path is not None else DEFAULT_BODY_MODEL
        try:
            doc = yaml.safe_load(path.read_text())
        except OSError as e:
            raise InputError(f"cannot read body model {str(path)!r}: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise InputError(f"body model {str(path)!r} is not valid YAML: {e}") from None
        return cls.from_dict(doc, source=str(path))

    @classmethod
    def from_dict(cls, doc, source="<dict>"):
        """Build from the YAML's structure: {standard: str, regions: {key: {...}}}."""
        if not isinstance(doc, dict) or not isinstance(doc.get("regions"), dict) or not doc["regions"]:
            raise InputError(f"body model {source!r}: expected a mapping with a non-empty "
                             "'regions' mapping")
        regions = {str(k): _region(str(k), v, source) for k, v in doc["regions"].items()}
        return cls(regions, source=source, standard=str(doc.get("standard", "")))


def _positive(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where} must be finite and > 0, got {value!r}")
    return float(value)


def _region(key, d, source):
    where = f"body model {source!r}, region {key!r}"
    if not isinstance(d, dict):
        raise InputError(f"{where}: expected a mapping, got {d!r}")
    for field in ("effective_mass", "spring_constant", "force", "areas"):
        if field not in d:
            raise InputError(f"{where}: missing field {field!r}")
    factor = d.get("transient_factor")
    if factor is not None:
        factor = _positive(factor, f"{where}, transient_factor")
        if factor < 1:
            raise InputError(f"{where}, transient_factor must be >= 1 (transient limits are "
                             f"at least the quasi-static ones), got {factor!r}")
    areas = d["areas"]
    if not isinstance(areas, dict) or not areas:
        raise InputError(f"{where}: 'areas' must be a non-empty mapping area -> N/cm^2")
    return BodyRegion(
        key=key, name=str(d.get("name", key)),
        effective_mass=_positive(d["effective_mass"], f"{where}, effective_mass"),
        spring_constant=_positive(d["spring_constant"], f"{where}, spring_constant") * N_PER_MM,
        force=_positive(d["force"], f"{where}, force"),
        transient_factor=factor,
        areas={str(a): _positive(p, f"{where}, area {a!r}") * PA_PER_N_CM2
               for a, p in areas.items()})
