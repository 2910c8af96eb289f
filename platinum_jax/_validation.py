"""Input validation at the public boundary.

Checks run once, eagerly, on concrete arrays and raise ``ValueError`` messages that name the
input, the property that failed and what to do.  Traced arrays (inside ``jit``/``vmap``) are
skipped here; :func:`runtime_checks` offers the in-graph alternative via ``eqx.error_if``.
"""

from __future__ import annotations

import warnings
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["is_concrete", "validate_primitives", "runtime_checks", "rounding_rtol",
           "check_solvable", "check_range"]

SYMMETRY_RTOL = 1e-8
PSD_RTOL = 1e-8
# Relative error of a solve that is worth a warning: cond(K) · eps(dtype) above this means fewer
# than about four correct significant digits (float64: cond > ~5e11; float32: cond > ~1e3).
PRECISION_WARN = 1e-4


def rounding_rtol(dtype: Any, size: int = 1, floor: float = 1e-8) -> float:
    """Relative tolerance for a property that holds exactly but is computed in ``dtype``.

    ``max(floor, 10 · size · eps(dtype))``.  The float64 checks of this package use ``floor``
    (1e-8), far above float64 rounding (``eps ≈ 2.2e-16``), so there the result is ``floor``
    for any realistic ``size``.  float32 (JAX's default, ``eps ≈ 1.2e-7``) rounds *above* 1e-8,
    so there the tolerance follows ``eps`` instead, growing with the size ``m`` of the matrices
    involved because an m-term product accumulates up to m roundings.
    """
    try:
        eps = float(jnp.finfo(dtype).eps)
    except ValueError:  # integer or bool data are exact; they are promoted to float64 here
        eps = float(np.finfo(np.float64).eps)
    return max(floor, 10.0 * max(int(size), 1) * eps)


def is_concrete(*arrays: Any) -> bool:
    """True when none of ``arrays`` is a JAX tracer (so values can be inspected)."""
    return not any(isinstance(a, jax.core.Tracer) for a in arrays if a is not None)


def _as_float_array(name: str, x: Any) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise ValueError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} must be real, got complex dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0]) if arr.ndim else ()
        raise ValueError(
            f"{name} contains {int(bad.sum())} non-finite value(s) (NaN or inf), first at index "
            f"{where}; replace or remove them before calling"
        )
    return arr


def _check_square(name: str, X: np.ndarray, size: int | None, size_from: str) -> None:
    if X.ndim != 2 or X.shape[0] != X.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {X.shape}")
    if size is not None and X.shape[0] != size:
        raise ValueError(f"{name} has shape {X.shape} but {size_from}: it must be {size} x {size}")


def _check_symmetric(name: str, X: np.ndarray, rtol: float = SYMMETRY_RTOL) -> None:
    # Relative to the matrix's own scale: the model is scale-free (v* is unchanged when M and
    # Sigma are multiplied by one factor), so 1e-12·M must pass or fail exactly as M does.
    scale = float(np.max(np.abs(X))) if X.size else 0.0
    asym = float(np.max(np.abs(X - X.T))) if X.size else 0.0
    if asym > rtol * scale:
        raise ValueError(
            f"{name} is not symmetric: max |{name} - {name}^T| = {asym:.3g}; "
            f"if the asymmetry is rounding, pass ({name} + {name}.T) / 2"
        )


def _numerically_zero(X: np.ndarray) -> float:
    """Relative size below which a float64 eigenvalue of ``X`` cannot be told from 0."""
    return 10.0 * max(X.shape[0], 1) * float(np.finfo(np.float64).eps)


def _check_definite(name: str, X: np.ndarray, *, strict: bool, rtol: float = PSD_RTOL) -> None:
    eig = np.linalg.eigvalsh(X)
    smallest = float(eig[0])
    scale = float(np.max(np.abs(eig))) if eig.size else 0.0  # relative: see _check_symmetric
    if strict and smallest <= _numerically_zero(X) * scale:
        raise ValueError(
            f"{name} is not positive definite: smallest eigenvalue {smallest:.6g} "
            f"(largest {float(eig[-1]):.6g}; it must be > 0 relative to the largest; add a "
            "small ridge to the diagonal or fix the construction)"
        )
    if not strict and smallest < -rtol * scale:
        raise ValueError(
            f"{name} is not positive semi-definite: smallest eigenvalue {smallest:.6g} "
            f"(tolerance -{rtol:.3g} x {scale:.3g})"
        )


def validate_primitives(
    *,
    A: Any = None,
    C: Any = None,
    Sigma: Any = None,
    w: Any = None,
    r: Any = None,
    M: Any = None,
    v: Any = None,
) -> None:
    """Check the primitives of the principal-agent model and raise a named ``ValueError``.

    Properties checked (only for the arguments given, and only for concrete arrays):

    * every entry finite;
    * shapes agree: ``A`` is ``(m, n)``, ``C`` is ``(n, n)``, ``Sigma`` and ``M`` are ``(m, m)``,
      ``w`` and ``v`` are ``(m,)``;
    * ``C``, ``Sigma``, ``M`` symmetric (max asymmetry <= tol x max(1, max |X|));
    * ``C`` and ``Sigma`` positive definite (smallest eigenvalue > 0);
    * ``M`` positive semi-definite (smallest eigenvalue >= -tol x max(1, |largest eigenvalue|));
    * ``r`` a scalar >= 0.

    ``tol`` is 1e-8 for float64 inputs and :func:`rounding_rtol` of the input's dtype and size
    for lower precision (a float32 ``M = AC⁻¹Aᵀ`` of rank < m has eigenvalues of order
    ``-eps(float32) ‖M‖`` where the exact ones are 0).
    """
    given = {k: x for k, x in dict(A=A, C=C, Sigma=Sigma, w=w, r=r, M=M, v=v).items()
             if x is not None}
    if not is_concrete(*given.values()):
        return
    dtypes = {k: getattr(x, "dtype", None) for k, x in given.items()}
    arr = {k: _as_float_array(k, x) for k, x in given.items()}

    m: int | None = None
    m_from = ""
    n: int | None = None
    if "A" in arr:
        if arr["A"].ndim != 2:
            raise ValueError(f"A must be a matrix of shape (m tasks, n activities), got {arr['A'].shape}")
        m, n = arr["A"].shape
        m_from = f"A has {m} rows (m = {m} tasks)"
    for name in ("Sigma", "M"):
        if name in arr:
            _check_square(name, arr[name], m, m_from)
            if m is None:
                m, m_from = arr[name].shape[0], f"{name} is {arr[name].shape[0]} x {arr[name].shape[0]}"
    if "C" in arr:
        _check_square("C", arr["C"], n, f"A has {n} columns (n = {n} activities)")
    for name in ("w", "v"):
        if name in arr:
            x = arr[name]
            if x.ndim != 1:
                raise ValueError(f"{name} must be a vector of shape (m,), got shape {x.shape}")
            if m is not None and x.shape[0] != m:
                raise ValueError(f"{name} has length {x.shape[0]} but {m_from}: it must have length {m}")
    if "r" in arr:
        r_arr = arr["r"]
        if r_arr.ndim != 0:
            raise ValueError(f"r (risk aversion) must be a scalar, got shape {r_arr.shape}")
        if float(r_arr) < 0:
            raise ValueError(f"r (risk aversion) must be >= 0, got {float(r_arr):g}")
    for name, strict in (("C", True), ("Sigma", True), ("M", False)):
        if name in arr:
            dtype = dtypes[name] if dtypes[name] is not None else np.float64
            rtol = rounding_rtol(dtype, arr[name].shape[0], SYMMETRY_RTOL)
            _check_symmetric(name, arr[name], rtol)
            _check_definite(name, arr[name], strict=strict, rtol=rtol)


def check_range(name: str, x: np.ndarray, dtype: Any) -> None:
    """Raise a named ``ValueError`` when ``x`` has entries too large for ``dtype`` (overflow)."""
    big = float(np.max(np.abs(x))) if x.size else 0.0
    limit = float(jnp.finfo(dtype).max)
    if big > limit:
        raise ValueError(
            f"{name} has entries of size {big:.3g}, beyond the largest {jnp.dtype(dtype).name} "
            f"({limit:.3g}): they would overflow to inf. v* is unchanged when M and Sigma are "
            "scaled by one factor, so divide them by a common scale"
            + (", or enable float64 with jax.config.update('jax_enable_x64', True)"
               if jnp.finfo(dtype).bits < 64 else "")
        )


def check_solvable(M: Any, Sigma: Any, w: Any, r: Any, dtype: Any) -> None:
    """Check that ``K = M + rΣ`` can be solved in ``dtype``, the precision JAX will use.

    Raises ``ValueError`` when an input or ``K`` or ``Mw`` overflows ``dtype``, or when ``K`` is
    singular relative to its scale (its smallest eigenvalue indistinguishable from 0 in
    float64); warns (``RuntimeWarning``) when ``cond(K) · eps(dtype)`` exceeds 1e-4, i.e. when
    the weights may have fewer than about four correct digits (float32 with cond(K) = 1e8 gives
    relative errors of order 1).  Concrete inputs only.
    """
    arr = {k: np.asarray(x, np.float64) for k, x in dict(M=M, Sigma=Sigma, w=w, r=r).items()}
    for k, x in arr.items():
        check_range(k, x, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        K = arr["M"] + arr["r"] * arr["Sigma"]
        Mw = arr["M"] @ arr["w"]
    check_range("M + r Sigma", K, dtype)
    check_range("M w", Mw, dtype)
    finfo = jnp.finfo(dtype)
    eig = np.linalg.eigvalsh(K)
    largest, smallest = float(eig[-1]), float(eig[0])
    if largest <= 0 or smallest <= _numerically_zero(K) * largest:
        raise ValueError(
            "M + r Sigma is not positive definite (smallest eigenvalue "
            f"{smallest:.3g}, largest {largest:.3g}; r = 0 with a singular M?): the optimal "
            "weights are not unique; use r > 0 or a full-rank M"
        )
    cond = largest / smallest
    if cond * float(finfo.eps) > PRECISION_WARN:
        hint = ("enable float64 with jax.config.update('jax_enable_x64', True)"
                if finfo.bits < 64 else "regularise (larger r, a ridge on Sigma) or rescale")
        warnings.warn(
            f"M + r Sigma has condition number {cond:.2g}: in {jnp.dtype(dtype).name} the "
            f"optimal weights may carry relative errors up to about {cond * float(finfo.eps):.1g}; "
            f"{hint}",
            RuntimeWarning, stacklevel=4,
        )


def runtime_checks(M: jax.Array, Sigma: jax.Array, w: jax.Array, r: jax.Array) -> jax.Array:
    """In-graph checks for traced inputs: returns ``M`` wrapped in ``eqx.error_if`` guards.

    Use inside ``jit`` when the eager checks cannot see values.  Raises at run time (an
    ``EqxRuntimeError``) if any input is non-finite, ``r < 0`` or ``Sigma`` is not positive
    definite (its Cholesky factor has NaNs).
    """
    finite = (
        jnp.all(jnp.isfinite(M)) & jnp.all(jnp.isfinite(Sigma)) & jnp.all(jnp.isfinite(w))
        & jnp.isfinite(r)
    )
    M = eqx.error_if(M, ~finite, "non-finite value in M, Sigma, w or r")
    M = eqx.error_if(M, r < 0, "r (risk aversion) must be >= 0")
    chol_ok = jnp.all(jnp.isfinite(jnp.linalg.cholesky(Sigma)))
    M = eqx.error_if(M, ~chol_ok, "Sigma is not positive definite")
    return M
