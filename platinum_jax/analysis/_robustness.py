"""Robustness of the capability scale to the anchor and to the benchmark set.

Two checks from the paper's discussion of identifiability:

* :func:`anchor_robustness` refits with other anchor benchmarks (e.g. MMLU, HellaSwag instead of
  Winogrande) -- the anchor fixes the scale, so absolute capabilities move while the ranking
  should not;
* :func:`leave_benchmarks_out` refits with each benchmark left out in turn.

Both report, per variant, the Spearman and Kendall rank correlations of the capabilities with
the baseline fit, the mean and mean absolute shift C_variant - C_base, and the affine map
C_variant ~ a + b C_base (least squares) that best aligns the two scales.

Leaving benchmarks out defaults to *masking* (weight 0 on that benchmark's scores) so every
variant has the baseline's static shapes and all run in one ``vmap``-ed solve.  The masked
benchmark's own D and alpha then only feel the L2 penalty (they go to 0) and the penalty's
normaliser M + 2B - 1 still counts it, a relative change of 2 / (M + 2B - 1) in the effective
L2 strength (about 1% on the paper's data); ``method="refit"`` drops the benchmark for real.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy import stats

from platinum_jax._distributed import spread

__all__ = ["RobustnessResult", "anchor_robustness", "compare_capabilities", "leave_benchmarks_out"]


def compare_capabilities(base: pd.Series, other: pd.Series) -> dict[str, float]:
    """Rank agreement and shift between two capability vectors (matched on model names)."""
    common = base.index.intersection(other.index)
    if len(common) < 3:
        raise ValueError(f"only {len(common)} models in common; need >= 3 to compare")
    x = base.loc[common].to_numpy(dtype=np.float64)
    y = other.loc[common].to_numpy(dtype=np.float64)
    diff = y - x
    b, a = np.polyfit(x, y, 1)
    return {
        "n_models": float(len(common)),
        "spearman": float(stats.spearmanr(x, y).statistic),
        "kendall": float(stats.kendalltau(x, y).statistic),
        "pearson": float(np.corrcoef(x, y)[0, 1]),
        "mean_shift": float(diff.mean()),
        "mean_abs_shift": float(np.abs(diff).mean()),
        "max_abs_shift": float(np.abs(diff).max()),
        "affine_intercept": float(a),
        "affine_slope": float(b),
        "rms_after_affine": float(np.sqrt(np.mean((y - (a + b * x)) ** 2))),
    }


@dataclass(frozen=True, eq=False)
class RobustnessResult:
    """``summary``: one row per variant (comparison statistics); ``capabilities``: models x
    variants (the baseline column is ``"baseline"``); ``costs`` per variant."""

    summary: pd.DataFrame
    capabilities: pd.DataFrame
    kind: str


def _check_benchmarks(table, names: Sequence[str], what: str) -> list[str]:
    from platinum_jax._names import UnknownNameError, close_matches_message

    out = []
    for n in names:
        if n not in table.benchmarks:
            raise UnknownNameError(close_matches_message(f"{what} benchmark", n, table.benchmarks))
        out.append(n)
    return out


def anchor_robustness(
    table: Any,
    anchors: Sequence[str] = ("MMLU", "HellaSwag"),
    *,
    baseline: Any = None,
    l2: float = 0.1,
    progress: bool = False,
) -> RobustnessResult:
    """Refit ``table`` with each benchmark in ``anchors`` as the anchor (D = 0, alpha = 1).

    ``baseline``: an existing :class:`StitchingFit` to compare against (default: refit with
    the default Winogrande anchor).  Returns a :class:`RobustnessResult`.
    """
    from tqdm import tqdm

    from platinum_jax.models.rosetta import BenchmarkAnchor
    from platinum_jax.stitching import fit_stitching

    names = _check_benchmarks(table, anchors, "anchor")
    base = fit_stitching(table, BenchmarkAnchor(), l2) if baseline is None else baseline
    base_c = base.capabilities["capability"]
    caps = {"baseline": base_c}
    rows = []
    refits = _spread_refits([lambda name=name: fit_stitching(table, BenchmarkAnchor(name), l2)
                             for name in names], table.models, "anchors", progress, tqdm)
    for name, (c, cost, converged) in zip(names, refits, strict=True):
        caps[name] = c
        rows.append({"variant": name, "cost": cost, "converged": converged,
                     **compare_capabilities(base_c, c)})
    return RobustnessResult(
        summary=pd.DataFrame(rows).set_index("variant"),
        capabilities=pd.DataFrame(caps),
        kind="anchor",
    )


def _spread_refits(refits, models, desc, progress, tqdm):
    """Run the independent ``refits`` (callables returning a :class:`StitchingFit`); in a
    multi-process run (jax.distributed) each process runs its share and all get every result.
    Returns ``(capabilities, cost, converged)`` per refit, the capabilities a Series over the
    models the refit kept."""
    models = pd.Index(models, name="model")

    def one(k):
        fit = refits[k]()
        c = fit.capabilities["capability"].reindex(models)  # models a refit lost: NaN
        return (c.to_numpy(np.float64), np.float64(fit.cost), np.bool_(fit.converged))

    bar = tqdm(total=len(refits), desc=desc, disable=not progress)
    out = spread(one, len(refits), progress=lambda done, _n: bar.update(done - bar.n))
    bar.close()
    return [(pd.Series(c, index=models).dropna(), float(cost), bool(conv))
            for c, cost, conv in out]


def _masked_refits(table, base, l2, weights, max_steps):
    """Refits of the Rosetta model on ``table``, one per row of ``weights`` (R, N), started at
    ``base``: one vmapped call of the measurement engine's solver. Returns capabilities (R, M),
    objectives and convergence flags."""
    import dataclasses

    from platinum_jax.inference import Problem, map_solver
    from platinum_jax.models import Rosetta
    from platinum_jax.stitching import to_engine_theta

    problem = Problem(Rosetta(link=base.link, l2=float(l2), anchor=base.anchor), table.responses)
    start = to_engine_theta(base.layout, base.theta)
    start = type(start)(*(jnp.asarray(t, problem.dtype) for t in start))
    data = problem.data()
    solve = map_solver(problem, batched="data", max_steps=int(max_steps))
    res = solve(start, dataclasses.replace(data, weight=jnp.asarray(weights, problem.dtype)))
    return np.asarray(res.theta.subjects[..., 0]), np.asarray(res.objective), \
        np.asarray(res.converged)


def leave_benchmarks_out(
    table: Any,
    benchmarks: Sequence[str] | None = None,
    *,
    baseline: Any = None,
    l2: float = 0.1,
    method: str = "mask",
    max_steps: int = 500,
    progress: bool = False,
) -> RobustnessResult:
    """Refit with each of ``benchmarks`` (default: every non-anchor benchmark) left out.

    ``method="mask"`` (default) zero-weights the benchmark's scores and solves all variants in
    one vmapped call; ``method="refit"`` drops it from the table and refits one by one.  The
    anchor benchmark cannot be left out (change the anchor instead: :func:`anchor_robustness`).
    """
    from tqdm import tqdm

    from platinum_jax.models.rosetta import BenchmarkAnchor
    from platinum_jax.stitching import fit_stitching

    if method not in ("mask", "refit"):
        raise ValueError(f"method must be 'mask' or 'refit', got {method!r}")
    base = fit_stitching(table, BenchmarkAnchor(), l2) if baseline is None else baseline
    anchor_name = getattr(base.anchor, "benchmark", None)
    if benchmarks is None:
        benchmarks = [b for b in table.benchmarks if b != anchor_name]
    names = _check_benchmarks(table, benchmarks, "left-out")
    if anchor_name in names:
        raise ValueError(
            f"{anchor_name!r} is the anchor and cannot be left out; compare anchors with "
            "anchor_robustness instead"
        )
    base_c = base.capabilities["capability"]
    caps = {"baseline": base_c}
    rows = []
    if method == "mask":
        bidx = np.asarray(table.benchmark_index)
        pos = np.array([table.benchmarks.index(n) for n in names])
        weights = (bidx[None, :] != pos[:, None]).astype(np.float64)
        # One vmapped call; in a multi-process run (jax.distributed) each process solves an
        # equal share of the variants (padded with repeats of the last) and all get every one.
        share = -(-len(weights) // jax.process_count())
        padded = np.concatenate([weights, np.repeat(weights[-1:], share * jax.process_count()
                                                    - len(weights), axis=0)])
        parts = spread(lambda k: _masked_refits(table, base, float(l2),
                                                padded[k * share:(k + 1) * share], max_steps),
                       jax.process_count())
        all_c, cost, conv = (np.concatenate(a)[:len(weights)] for a in zip(*parts, strict=True))
        models = pd.Index(table.models, name="model")
        for i, n in enumerate(names):
            # models scored only on the left-out benchmark have no data left: drop them
            keep = np.bincount(np.asarray(table.model_index)[weights[i] > 0],
                               minlength=len(models)) > 0
            c = pd.Series(all_c[i][keep], index=models[keep])
            caps[n] = c
            rows.append({"variant": n, "cost": float(cost[i]), "converged": bool(conv[i]),
                         **compare_capabilities(base_c, c)})
    else:
        refits = _spread_refits(
            [lambda n=n: fit_stitching(table.drop_benchmarks([n]), base.anchor, l2)
             for n in names], table.models, "leave-one-out", progress, tqdm)
        for n, (c, cost, converged) in zip(names, refits, strict=True):
            caps[n] = c
            rows.append({"variant": n, "cost": cost, "converged": converged,
                         **compare_capabilities(base_c, c)})
    return RobustnessResult(
        summary=pd.DataFrame(rows).set_index("variant"),
        capabilities=pd.DataFrame(caps),
        kind="leave_out",
    )
