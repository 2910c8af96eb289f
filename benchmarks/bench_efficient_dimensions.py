"""Could a second ability dimension lower the efficient-evaluation bound on LiveCodeBench?

The binomial 2PL is fitted to all 72 models on the 400 common code-generation problems (the
"oracle" item parameters of ``bench_efficient_eval.py``). Its residual matrix ``R = y - mu``
(models x problems) is decomposed by SVD: the share of the residual sum of squares in the first
components is what a second (third, ...) dimension could explain at best, with every ability
known exactly. The same share for pure binomial noise at the fitted ``mu`` (ten samples per
pass@1, no structure) is printed beside it: only the excess over it is structure. Also printed:
the spread of each model's mean residual (its bias, what the combined estimate corrects) against
the sampling noise of a 50-item mean residual.

Run from the repository root: ``python benchmarks/bench_efficient_dimensions.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    from bench_efficient_eval import DATA, load

    from platinum_jax._runtime import enable_float64

    enable_float64()
    from platinum_jax.data import ResponseTable
    from platinum_jax.inference import fit_map
    from platinum_jax.models import Binomial, TwoPL

    frame, _ = load(DATA)
    table = ResponseTable.from_frame(frame, name="every model")
    fit = fit_map(TwoPL(likelihood=Binomial()), table)
    theta = np.asarray(fit.theta.subjects, np.float64).ravel()
    items = np.asarray(fit.theta.items, np.float64)
    mu = expit(np.exp(items[:, 1])[None] * (theta[:, None] - items[:, 0][None]))
    y = frame.pivot(index="subject", columns="item", values="response").reindex(
        index=table.subjects, columns=table.items).to_numpy()

    def shares(r):
        sv = np.linalg.svd(r - r.mean(0), compute_uv=False)
        return np.cumsum(sv[:5] ** 2 / (r ** 2).sum())

    resid = y - mu
    noise = np.random.default_rng(0).binomial(10, mu) / 10 - mu
    print(f"residual sd {resid.std():.4f}; response sd per model (mean) {y.std(1).mean():.4f}; "
          f"ratio {resid.std() / y.std(1).mean():.3f}")
    print("share of the residual sum of squares in the first 1..5 components:",
          np.round(shares(resid), 3))
    print("the same for binomial noise at the fitted mu (no structure):     ",
          np.round(shares(noise), 3))
    print(f"sd of the models' mean residual (bias) {100 * resid.mean(1).std():.2f} points; sd of "
          f"a 50-item mean residual from noise {100 * np.sqrt((resid.var(1) / 50).mean()):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
