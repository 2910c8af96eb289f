"""``platinum-jax fit --stream``: the leaderboard-scale 2PL, responses held one byte per cell
(:func:`platinum_jax.inference.fit_streamed_2pl`), run by the same runner as every fit."""

from __future__ import annotations

from pathlib import Path

from ._common import list_written


def check_stream(args) -> None:
    if args.model != "2pl" or args.method != "marginal":
        raise ValueError(f"--stream fits --model 2pl --method marginal (got --model "
                         f"{args.model} --method {args.method})")
    other = _stream_blockers(args, duplicates=False)
    if other:
        raise ValueError(f"--stream does not take {', '.join(other)}; drop them or fit "
                         "without --stream")
    if Path(args.data).suffix.lower() not in (".parquet", ".pq"):
        raise ValueError(f"--stream reads a Parquet file (got {args.data}); write one with "
                         "`platinum-jax import tidy ... --out responses.parquet`")


def _stream_blockers(args, duplicates: bool = True) -> list[str]:
    """The options given that the streamed fit does not take (with ``duplicates``, also a
    --duplicates rule other than error: the streamed reader refuses repeated pairs)."""
    return [flag for flag, on in (("--diagnostics", args.diagnostics),
                                  ("--save-draws", args.save_draws),
                                  ("--noise-per-item", args.noise_per_item),
                                  ("--from-fractions", args.from_fractions is not None),
                                  ("--likelihood", args.likelihood is not None),
                                  (f"--duplicates {args.duplicates}",
                                   duplicates and args.duplicates != "error")) if on]


def memory_route(args) -> str | None:
    """``fit --model 2pl --method marginal`` on a Parquet file, before it is read: None when
    the default path (a response table, then the marginal EM's layout) fits in memory; the
    reason to take the streamed path when only that one fits; :class:`InsufficientMemory`
    (within seconds, from the file's metadata) when neither does."""
    from platinum_jax._memory import (
        TABLE_BYTES_PER_RESPONSE,
        InsufficientMemory,
        dense_layout,
        gigabytes,
        marginal_bytes,
        memory_available,
        streamed_bytes,
    )

    path = Path(args.data)
    if (args.stream or args.model != "2pl" or args.method != "marginal"
            or path.suffix.lower() not in (".parquet", ".pq") or not path.is_file()):
        return None
    have, source = memory_available()
    if have is None:
        return None
    from platinum_jax.data import CodedResponses

    n_s, n_i, n = CodedResponses.parquet_shape(path)
    counted = n_s is not None and n_i is not None
    dense = counted and dense_layout(n_s, n_i)
    layout = "dense" if dense else "row"
    need = TABLE_BYTES_PER_RESPONSE * n + marginal_bytes(
        n_s or 1, n_i or 1, n, nodes=61, eap_nodes=241, dense=dense)
    if need <= have:
        return None
    # labels not counted (strings, beyond 50 million rows): at least a byte a response
    stream = streamed_bytes(n_s, n_i, n) if counted else streamed_bytes(1, 1, n) + n
    default = (f"{path} ({n:,} responses): the marginal fit's {layout} layout and the "
               f"response table need about {gigabytes(need)}, {gigabytes(max(have, 0))} are "
               f"available ({source})")
    blockers = _stream_blockers(args)
    if blockers or stream > have:
        why = (f"the streamed fit, about {gigabytes(stream)}, does not fit either" if
               not blockers else f"the streamed fit that would fit does not take "
               f"{', '.join(blockers)}")
        raise InsufficientMemory(
            f"{default}; {why}. Use a machine with more memory, fit a sample of the "
            f"responses{', or drop ' + ', '.join(blockers) + ' and add --stream' if blockers else ''}")
    return (f"{default}; fitting streamed instead (one byte a cell, "
            f"{'about' if counted else 'at least'} {gigabytes(stream)}), as --stream does")


def load_stream(path: str, args):
    from platinum_jax.data import read_parquet_streamed

    try:
        responses = read_parquet_streamed(path)
    except ValueError as exc:
        if getattr(args, "memory_route", None) is None:
            raise
        raise ValueError(f"{args.memory_route}; but the streamed reader refuses the file: "
                         f"{exc}") from exc
    print(f"read {responses}")
    return responses


def fit_stream(args, responses):
    """``--stream``: the streamed 2PL (:func:`platinum_jax.inference.fit_streamed_2pl`)."""
    from platinum_jax._distributed import joined
    from platinum_jax.inference import fit_streamed_2pl

    # Joined to a multi-process run: the blocks of subjects are split over every process's
    # devices (the one-process answer, gathered on every process).
    result = fit_streamed_2pl(responses, em=args.em or "scale",
                              mesh=True if joined() else None)
    if getattr(args, "memory_route", None) is not None:
        result.diagnostics["layout_chosen"] = args.memory_route
    return result


def finish_stream(result, written, args) -> int:
    print(f"model 2pl (bernoulli), method marginal (streamed, em "
          f"{result.diagnostics['em']}): marginal log-likelihood "
          f"{result.diagnostics['marginal_log_lik']:.6g}, converged {result.converged}, "
          f"{result.diagnostics['iterations']} EM steps")
    return list_written(written, result.converged)


def write_stream(result, out, args) -> list:
    """items.csv, subjects.csv and fit.json, as :meth:`StreamedFit.files` gives them."""
    return [out.write_text(name, text) for name, text in result.files().items()]
