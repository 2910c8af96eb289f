"""``platinum-jax fit --stream``: the leaderboard-scale 2PL, responses held one byte per cell
(:func:`platinum_jax.inference.fit_streamed_2pl`), run by the same runner as every fit."""

from __future__ import annotations

from pathlib import Path

from ._common import list_written


def check_stream(args) -> None:
    if args.model != "2pl" or args.method != "marginal":
        raise ValueError(f"--stream fits --model 2pl --method marginal (got --model "
                         f"{args.model} --method {args.method})")
    other = [flag for flag, on in (("--diagnostics", args.diagnostics),
                                    ("--save-draws", args.save_draws),
                                    ("--noise-per-item", args.noise_per_item),
                                    ("--from-fractions", args.from_fractions is not None),
                                    ("--likelihood", args.likelihood is not None)) if on]
    if other:
        raise ValueError(f"--stream does not take {', '.join(other)}; drop them or fit "
                         "without --stream")
    if Path(args.data).suffix.lower() not in (".parquet", ".pq"):
        raise ValueError(f"--stream reads a Parquet file (got {args.data}); write one with "
                         "`platinum-jax import tidy ... --out responses.parquet`")


def load_stream(path: str, args):
    from platinum_jax.data import read_parquet_streamed

    responses = read_parquet_streamed(path)
    print(f"read {responses}")
    return responses


def fit_stream(args, responses):
    """``--stream``: the streamed 2PL (:func:`platinum_jax.inference.fit_streamed_2pl`)."""
    from platinum_jax._distributed import joined
    from platinum_jax.inference import fit_streamed_2pl

    # Joined to a multi-process run: the blocks of subjects are split over every process's
    # devices (the one-process answer, gathered on every process).
    return fit_streamed_2pl(responses, em=args.em or "scale", mesh=True if joined() else None)


def finish_stream(result, written, args) -> int:
    print(f"model 2pl (bernoulli), method marginal (streamed, em "
          f"{result.diagnostics['em']}): marginal log-likelihood "
          f"{result.diagnostics['marginal_log_lik']:.6g}, converged {result.converged}, "
          f"{result.diagnostics['iterations']} EM steps")
    return list_written(written, result.converged)


def write_stream(result, out, args) -> list:
    """items.csv, subjects.csv and fit.json, as :meth:`StreamedFit.files` gives them."""
    return [out.write_text(name, text) for name, text in result.files().items()]
