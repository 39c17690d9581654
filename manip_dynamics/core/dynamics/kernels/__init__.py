"""Numba kernels: the rigid-body algorithms, one implementation, batched inside numba.

Conventions (all kernels):

- Every body quantity is expressed in the ROOT frame, about the root ORIGIN ("world"
  spatial notation, Featherstone ch. 2 with linear-first ordering ``[v; w]``):
  a spatial velocity ``V = [v_O; w]`` gives the velocity ``v_P = v_O + w x P`` of any
  body-fixed point P; a spatial force ``F = [f; n_O]``.  In this notation the motion
  subspaces add without transforms: ``V_i = V_parent + S_i qd_i``.
- ``bodies`` is the body table (:mod:`manip_dynamics.core.dynamics.bodies`): one record per moving
  joint, ``bodies[i].parent < i`` (-1 = root), ``.jtype``, ``.axis``, ``.R_tree``,
  ``.p_tree``, ``.q_index``, ``.mimic_multiplier``, ``.mimic_offset``, ``.mass``, ``.com``,
  ``.I_com``. A joint type other than revolute or prismatic is refused (ValueError).
- ``q`` arguments are always batches ``(N, n)`` of independent coordinates; mimic joints
  are expanded by ``q_full = G q + offset`` (:func:`expand_positions`) and results are
  mapped back by ``tau = G^T tau_full`` (:func:`reduce_vector`), ``M = G^T M_full G``
  (:func:`reduce_matrix`).
- Names carry frames as in markers.py: ``R_root_body[i]``, ``p_root_body[i]`` (pose of
  body i in the root frame), ``X_body_frame`` (a link's fixed 4x4 pose on its body),
  ``R_root_frame``, ``p_root_frame``. Spatial quantities are in root coordinates: ``S``
  (motion subspaces), ``V`` (velocities), ``Vd`` (accelerations), ``F`` (forces), the
  body inertias ``(m, h = m c, I_o)`` about the root origin.
- Scratch arrays are allocated per call (:func:`workspace`; the gravity, Coriolis, mass and
  kinematics chunks allocate only what they use, :func:`pose_scratch`), never stored in the
  model: thread safe, and ``nogil=True`` lets several threads run kernels at once.

spatial_v2 (Featherstone's ``ID.m`` / ``HandC.m``) in our symbols; spatial_v2 works in
body coordinates and carries ``Xup{i}`` between bodies, we work in root coordinates where
those transforms are identities:

=====================================  ==============================================
spatial_v2                             here
=====================================  ==============================================
``parent(i)``  (0 = base)              ``bodies[i].parent``  (-1 = root)
``Xtree{i}``                           ``bodies[i].R_tree, .p_tree``
``[XJ, S{i}] = jcalc(...)``            ``forward_kinematics``: ``R_root_body[i]``,
                                       ``p_root_body[i]``, ``S[i]`` (root coordinates)
``Xup{i} = XJ * Xtree{i}``             (none: no transform between bodies)
``v{i} = Xup{i}*v{p} + vJ``            ``V[i] = V[parent] + S[i] qd[i]``
``a{i} = Xup{i}*a{p} + S qdd +         ``Vd[i] = Vd[parent] + S[i] qdd[i] +
crm(v{i})*vJ``;  ``a_grav``            V[i] x S[i] qd[i]``;  ``Vd_root = [-g; 0]``
``f{i} = I{i}*a{i} + crf(v)*I{i}*v``   ``F[i] = I[i] Vd[i] + V[i] x* I[i] V[i]``
``tau(i) = S{i}' * f{i}``              ``tau_full[i] = S[i] . F[i]``
``f{p} += Xup{i}' * f{i}``             ``F[parent] += F[i]``
``IC{p} += Xup{i}' * IC{i} * Xup{i}``  ``Ic[parent] += Ic[i]``  (CRBA)
``H(i,j) = S{j}' * fh``                ``M_full[i, j] = S[j] . (Ic[i] S[i])``, j up the
                                       path of i
=====================================  ==============================================

Modules, by what the code does: :mod:`.options` (numba options, status codes, flags),
:mod:`.spatial` (spatial algebra, the Workspace), :mod:`.coordinates` (mimic joints),
:mod:`.kinematics`, :mod:`.passes` (RNEA, CRBA, Coriolis), :mod:`.linalg` (Gram matrices,
Cholesky, solves, the condition-number rule), :mod:`.batches` (batch and one-state entry
points), :mod:`.bundle` (the per-state bundle), :mod:`.trig` (sin and cos together) and
:mod:`.symmetric_eigen` (eigenvalues of small symmetric matrices).

May import: numpy, numba and :mod:`manip_dynamics.core.dynamics.bodies` (the body table's
joint types). This package re-exports every public kernel and constant, so
``from . import kernels as K; K.batch_gravity`` reads as one namespace.
"""
import hashlib
from pathlib import Path


# The numba modules outside this folder whose kernels call kernels from here (paths below
# the package, manip_dynamics/): numba compiles those callees into the callers' cache
# entries too, so the callers' entries are dropped with this folder's cache.
_CALLERS = ("core/contact/detector.py", "core/contact/observer.py", "safety/kernel.py")


def _drop_stale_cache(folder=Path(__file__).parent, callers=_CALLERS):
    """Remove this folder's numba cache, and the cache entries of ``callers``, when any
    source of the kernels changed.

    numba (``cache=True``) invalidates a function's cached machine code only when the file
    that defines it changes, but a kernel here is compiled together with the kernels it
    calls from the neighbouring files (and the joint types of ``bodies.py``): an edit of
    ``linalg.cholesky`` would leave the bundle's cached copy stale, and so the cached
    copies in the modules that call kernels from here (``callers``: files below the
    package folder, three levels above this one; e.g. ``contact/detector.py`` calls
    ``cholesky``). So one SHA-256 of this folder's sources and ``bodies.py`` is kept next
    to the cache (``__pycache__/kernel_sources.sha256``); when it differs, this folder's
    cache files and the callers' (``<module>.*.nbi`` / ``.nbc`` in the ``__pycache__``
    beside each) go and numba compiles them afresh. A cache elsewhere (a read-only
    install, or ``NUMBA_CACHE_DIR``) is not touched."""
    sources = sorted(folder.glob("*.py")) + [folder.parent / "bodies.py"]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()
    cache = folder / "__pycache__"
    stamp = cache / "kernel_sources.sha256"
    if stamp.is_file() and stamp.read_text() == digest:
        return
    package = folder.parents[2]
    try:
        entries = [*cache.glob("*.nbi"), *cache.glob("*.nbc")]
        for caller in map(package.joinpath, callers):
            entries += caller.parent.glob(f"__pycache__/{caller.stem}.*.nb[ic]")
        for f in entries:
            f.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:
        pass


_drop_stale_cache()
from .options import (BAD_INPUT, BIAS, EIGENVECTORS, EIGVALSH_MIN_RATIO, EPS, MOMENTUM,
                      NOT_POSITIVE_DEFINITE, OK, OPERATIONAL, OVERFLOW, SINGULAR_COND)
from .spatial import Workspace, pose_scratch, workspace
from .coordinates import (expand_positions, expand_rates, no_mimic_joints, reduce_matrix,
                          reduce_vector)
from .kinematics import (first_moments, forward_kinematics, frame_jacobian, frame_pose,
                         point_acceleration, state_kinematics, world_inertias)
from .passes import (apply_external_wrench, coriolis_full, crba, crba_in_place, gravity_pass,
                     inverse_dynamics_state, mass_matrix, rnea_backward, rnea_forward,
                     velocity_pass)
from .linalg import (all_finite, cho_solve, cholesky, condition_number, damped_inverse_gain,
                     gram, solve_lower, solve_upper_t, spd_condition_number)
from .batches import (batch_bias_acceleration, batch_coriolis, batch_coriolis_matrix,
                      batch_coriolis_threads, batch_energy, batch_forward_dynamics, batch_gravity,
                      batch_gravity_threads, batch_kinematics, batch_kinematics_threads,
                      batch_mass, batch_mass_threads, batch_rnea, coriolis_chunk, gravity_chunk,
                      kinematics_chunk, mass_chunk, one_coriolis, one_gravity, one_jacobian,
                      one_mass, path_kinematics, support)
from .bundle import (BundleScratch, BundleViews, batch_bundle, batch_bundle_threads, bias_terms,
                     bundle_chunk, bundle_layout, bundle_scratch, bundle_views,
                     inverse_from_cholesky, lambda_with_damping, momentum_terms, one_bundle,
                     operational_space_bias, spectral_inverse, task_space_inverse)
