"""The result of an acceleration-detection study (:class:`DetectionStudy`) and the paper's
figures it is compared with; both detection protocols (:mod:`._detection`, :mod:`._hinge`)
return it, and :func:`._simulate.simulate_detection` dispatches between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["PAPER_SIMULATION_REFERENCE", "DetectionStudy"]

PAPER_SIMULATION_REFERENCE: dict[str, float] = {
    "latency_months_2x_at_1x_noise_low": 2.0,
    "latency_months_2x_at_1x_noise_high": 3.0,
    "mean_false_positive_rate": 0.38,
}


@dataclass(frozen=True, eq=False)
class DetectionStudy:
    """Results of :func:`simulate_detection` (immutable).

    ``protocol="paper"``: ``runs`` has one row per accelerated world (noise, factor, replicate)
    with ``detected``, ``latency_months``, ``detection_year``, ``breakpoint_year``, ``ratio``,
    ``r2``, ``n_checkpoints`` and ``converged``; ``false_positive_runs`` one row per
    no-acceleration world (noise, window, replicate) with ``flagged`` and the same fit columns.
    ``summary``: per (noise, factor) the detection rate and median/mean latency in months
    (factor > 1) or the false-positive rate averaged over the observation windows (factor 1).

    ``protocol="monthly_hinge"``: ``runs`` has one row per (noise, factor, replicate,
    observation date) with ``flagged``, ``ratio``, ``breakpoint_year`` and ``converged``;
    ``summary`` the detection rate after t_a, latency and the false-positive rate (flags before
    t_a, or any flag in a world with factor 1).
    """

    config: object
    threshold: float
    runs: pd.DataFrame
    summary: pd.DataFrame
    protocol: str = "monthly_hinge"
    false_positive_runs: pd.DataFrame | None = None

    def table(self, value: str = "median_latency_months") -> pd.DataFrame:
        """Pivot of a summary column: rows noise level, columns acceleration factor."""
        return self.summary.pivot(index="noise", columns="factor", values=value)

    def paper_comparison(self, level: float = 0.95) -> pd.DataFrame:
        """Our headline figures beside the paper's (section 3.3.1), with their Monte Carlo error.

        Rows: the median latency of a 2x acceleration at 1x noise over the worlds where it was
        detected (NaN when that cell was not run; the paper gives 2-3 months, reported as
        low/high), with a distribution-free ``level`` interval for the median from the order
        statistics of the latencies; the detection rate of that cell; and the false-positive
        rate over every world *without* acceleration (the pooled fraction of flagged worlds;
        NaN when none was run; paper: about 38%), with its binomial standard error
        ``sqrt(p (1 - p) / n)`` and a normal-approximation interval. ``n_worlds`` is the number
        of simulated worlds behind each figure.
        """
        from scipy import stats

        if not 0 < level < 1:
            raise ValueError(f"level must lie strictly between 0 and 1, got {level!r}")
        z = stats.norm.ppf(0.5 + level / 2)
        ref = PAPER_SIMULATION_REFERENCE
        nan = np.nan
        runs = self.runs
        cell = runs[(runs["noise"] == 1.0) & (runs["factor"] == 2.0)] if len(runs) else runs
        if self.protocol != "paper" or "latency_months" not in cell:
            # the monthly variant keeps per-date rows; take its summary's cell
            s = self.summary
            c = s[(s["noise"] == 1.0) & (s["factor"] == 2.0)]
            lat = np.array([float(c["median_latency_months"].iloc[0])]) if len(c) else np.array([])
            med, lo, hi, n_lat = (lat[0] if lat.size else nan), nan, nan, len(lat)
            det, det_se, n_det = nan, nan, 0
        else:
            found = cell["detected"].astype(bool).to_numpy()
            lat = np.sort(cell.loc[found, "latency_months"].to_numpy(np.float64))
            n_lat = lat.size
            med = float(np.median(lat)) if n_lat else nan
            lo, hi = _median_interval(lat, level)
            n_det = len(cell)
            det = float(found.mean()) if n_det else nan
            det_se = float(np.sqrt(det * (1 - det) / n_det)) if n_det else nan
        if self.false_positive_runs is not None and len(self.false_positive_runs):
            flags = self.false_positive_runs["flagged"].astype(bool).to_numpy()
        else:
            s = self.summary
            flat = s[s["factor"] <= 1.0]
            flags = (np.array([float(flat["false_positive_rate"].mean())])
                     if len(flat) else np.array([]))
        n_fp = flags.size
        fp = float(np.mean(flags)) if n_fp else nan
        fp_se = float(np.sqrt(fp * (1 - fp) / n_fp)) if n_fp > 1 else nan
        return pd.DataFrame(
            {
                "value": [med, det, fp],
                "se": [nan, det_se, fp_se],
                "low": [lo, det - z * det_se, fp - z * fp_se],
                "high": [hi, det + z * det_se, fp + z * fp_se],
                "n_worlds": [n_lat, n_det, n_fp],
                "paper_low": [ref["latency_months_2x_at_1x_noise_low"], nan, nan],
                "paper_high": [ref["latency_months_2x_at_1x_noise_high"], nan, nan],
                "paper_reference": [nan, nan, ref["mean_false_positive_rate"]],
            },
            index=pd.Index(
                ["median_latency_months_2x_at_1x_noise", "detection_rate_2x_at_1x_noise",
                 "mean_false_positive_rate"], name="quantity"
            ),
        )


def _median_interval(x: np.ndarray, level: float) -> tuple[float, float]:
    """Distribution-free interval for the median of sorted ``x``: order statistics
    ``x_(j) <= median <= x_(n+1-j)`` with ``P(Binomial(n, 1/2) < j) <= (1 - level) / 2``;
    NaN when no ``j >= 1`` qualifies (fewer than 6 values at level 0.95)."""
    from scipy import stats

    n = x.size
    if n == 0:
        return np.nan, np.nan
    j = int(stats.binom.ppf((1 - level) / 2, n, 0.5))  # largest j with the tail <= alpha / 2
    if j < 1 or stats.binom.cdf(j - 1, n, 0.5) > (1 - level) / 2:
        j = max(j - 1, 0)
    if j < 1:
        return np.nan, np.nan  # too few worlds: even the whole range falls short of the level
    return float(x[j - 1]), float(x[n - j])
