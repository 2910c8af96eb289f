"""``platinum-jax certify``: rubric-score benchmark items with an LLM judge and certify platinum items."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

_DESCRIPTION = """\
Certify platinum items with an LLM judge (Haupt, Reuel, Kochenderfer and Koyejo, "Optimal
Aggregation Mechanisms for AI Benchmarking and Platinum Benchmarks", section 4 and appendix A).

For each concept j the judge scores welfare alignment W_j (1-5), marginal improvement cost K_j
and measurement noise N_j (low/medium/high); for each item i and concept j it scores the
measurement strength S_ij (0-3).  Then

    Q_j = gamma(W_j) eta(K_j) pi(N_j)   with gamma(W) = W, eta = pi = 1, 1/2, 1/4
    P_i = max_j S_ij Q_j

By default an item is certified when some concept has W >= 4, K in {low, medium} and S >= 2
(the appendix rule; its "w_c in {low, medium}" means the cost K_c).  With --threshold T an
item is certified when P_i >= T instead.

ITEMS.jsonl holds one JSON object per line: {"item_id": ..., "text": ..., "reference": ...}
(reference optional).  The API key is read from OPENAI_API_KEY or ANTHROPIC_API_KEY (or the
variable named by --api-key-env).  Every finished call is stored in a SQLite cache, so rerunning
the same command costs nothing and an interrupted run picks up where it stopped.  Calls that ran
out of retries on rate limits, server errors or timeouts are reported as failed but not cached,
so the next run asks them again; invalid replies are cached and redone only with --retry-failed.

Outputs in --out DIR:
  items.csv     item_id, platinum_score, certified, concept (argmax_j S_ij Q_j), S_<concept>...
  concepts.csv  W, K, N, Q per concept, with judge agreement
  weights.csv   uniform, rubric (P_i / sum P) and model (v* of the agency model) weights
  judgments.csv every judge call: values, errors, raw replies (the audit trail)
  report.html   summary, figure and failures for a curator
  audit.csv, review.csv  with --expert: agreement with expert labels, cells to review first
  rankings.csv  with --results: model scores and ranks, uniform vs reweighted
DIR must be empty, or hold an earlier certify run and --overwrite be given: its outputs are
replaced, its judge cache (judgments.sqlite) is kept so finished calls are not paid for again.

Exit status:
  0  every judge call succeeded (whatever the number of items certified)
  2  a problem with the input or the setup (bad file, unknown option value, rejected API key,
     damaged cache, DIR not usable)
  3  some judge calls failed (rate limits, server errors, timeouts, unusable or invalid replies):
     the outputs are written but incomplete; rerun the same command with --overwrite to ask
     the failed calls again (add --retry-failed to also redo invalid replies)
  130  interrupted (Ctrl-C): every finished call is in the cache; rerun to continue
"""

_EPILOG = """\
examples:
  # OpenAI, default OECD concepts, appendix certification rule
  export OPENAI_API_KEY=...
  platinum-jax certify items.jsonl --judge openai:gpt-4o-mini --out cert/

  # a local vLLM / Ollama / llama.cpp server speaking the OpenAI API, 3 samples per cell
  # (at temperature 0.7: at the default 0 the three replies would usually be identical)
  export OPENAI_API_KEY=local
  platinum-jax certify items.jsonl --judge openai:qwen2.5-7b-instruct \\
      --base-url http://localhost:8000/v1 --samples 3 --temperature 0.7 --out cert/

  # two judges, own concept set, threshold rule P_i >= 6, audit against expert labels
  platinum-jax certify items.jsonl --judge openai:gpt-4o --judge anthropic:claude-sonnet-4-5 \\
      --concepts my_concepts.yaml --threshold 6 --expert expert.csv --out cert/

  # after fixing a provider problem, redo only the calls recorded as failed
  platinum-jax certify items.jsonl --judge openai:gpt-4o-mini --out cert/ --retry-failed
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "certify", help="score items with an LLM judge and certify platinum items",
        description=_DESCRIPTION, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("items", metavar="ITEMS.jsonl", help="benchmark items, one JSON object per line")
    p.add_argument("--judge", action="append", required=True, metavar="PROVIDER:MODEL",
                   help="openai:MODEL or anthropic:MODEL; repeat for several judges")
    p.add_argument("--concepts", default="oecd", metavar="oecd|FILE",
                   help="built-in concept set or a YAML/JSON/CSV file of name, definition (default: oecd)")
    p.add_argument("--base-url", default=None, metavar="URL",
                   help="base URL of an OpenAI-compatible server, e.g. http://localhost:8000/v1 for vLLM; "
                        "used by openai:MODEL judges only; anthropic:MODEL judges keep the Anthropic API (its "
                        "client reads ANTHROPIC_BASE_URL for a proxy). Not part of the cache "
                        "key: use one --cache per endpoint if two servers share a model name")
    p.add_argument("--api-key-env", default=None, metavar="VAR",
                   help="environment variable holding the API key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY)")
    p.add_argument("--samples", type=int, default=1,
                   help="replies per judge and cell, aggregated (default 1); at the default --temperature 0 "
                        "the replies are usually identical and their agreement trivially 1, so set a "
                        "temperature > 0 (e.g. 0.7) when sampling several times")
    p.add_argument("--threshold", type=float, default=None, metavar="T",
                   help="certify when P_i >= T instead of the appendix rule")
    p.add_argument("--cache", default=None, metavar="FILE", help="SQLite cache (default: DIR/judgments.sqlite)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output directory (created if needed; must be empty unless --overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the outputs of an earlier certify run in DIR (its judge cache is kept)")
    p.add_argument("--rebuild-cache", action="store_true",
                   help="if the judge cache is damaged, set it aside (NAME.corrupt-TIMESTAMP) and "
                        "start a new one; finished calls are then asked again")
    p.add_argument("--concurrency", type=int, default=4, help="parallel requests (default 4)")
    p.add_argument("--rate-limit", type=float, default=None, metavar="RPS", help="max requests per second")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    p.add_argument("--max-retries", type=int, default=5, help="retries on 429/5xx/timeouts (default 5)")
    p.add_argument("--parse-retries", type=int, default=2, help="re-asks after an invalid reply (default 2)")
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    p.add_argument("--max-tokens", type=int, default=512, help="reply token limit (default 512)")
    p.add_argument("--retry-failed", action="store_true", help="redo calls the cache records as failed")
    p.add_argument("--expert", default=None, metavar="CSV",
                   help="expert labels (field, concept, item_id, value) to audit the judge against")
    p.add_argument("--results", default=None, metavar="CSV",
                   help="models x items scores in [0, 1] (first column: model); compares rankings "
                        "under uniform and reweighted scores (Kendall tau)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run)


def run(args) -> int:

    from platinum_jax._runtime import enable_float64

    enable_float64()  # the model route solves linear systems
    from platinum_jax._outputs import output_directory
    from platinum_jax.judge import JudgeConfig, load_items, run_judgments
    from platinum_jax.rubric import load_concepts

    items = load_items(args.items)
    concepts = load_concepts(args.concepts)
    results = _load_results(args.results, items) if args.results else None  # before paying for calls
    judges = [JudgeConfig.from_spec(spec, api_key_env=args.api_key_env,
                                    temperature=args.temperature, max_tokens=args.max_tokens,
                                    timeout=args.timeout, max_retries=args.max_retries,
                                    parse_retries=args.parse_retries) for spec in args.judge]
    # --base-url names an OpenAI-compatible server; sending an anthropic: judge there as well
    # would break a run that mixes a local judge with a hosted Anthropic one.
    judges = [replace(j, base_url=args.base_url) if j.provider == "openai" else j for j in judges]
    cache_default = args.cache is None
    cache_names = ("judgments.sqlite", "judgments.sqlite-wal", "judgments.sqlite-shm")
    with output_directory(args.out, "certify", overwrite=args.overwrite,
                          keep=cache_names if cache_default else (),
                          hint="the judge cache there is kept, so finished calls cost nothing") as out:
        cache = out.own("judgments.sqlite") if cache_default else Path(args.cache)
        store = _open_cache(cache, args.rebuild_cache, out if cache_default else None)
        try:
            res = run_judgments(items, concepts, judges, samples=args.samples, cache=store,
                                concurrency=args.concurrency, rate_limit=args.rate_limit,
                                retry_failed=args.retry_failed, progress=not args.no_progress)
        except KeyboardInterrupt:
            out.abandon()
            print(f"platinum-jax certify: interrupted; {len(store)} finished judge call(s) are in "
                  f"{cache}; rerun the same command to continue", file=sys.stderr)
            return 130
        finally:
            store.close()
        return _write_outputs(args, out, res, items, concepts, results)


def _open_cache(path: Path, rebuild: bool, out):
    from platinum_jax.judge import CacheCorruptError, JudgmentCache, set_aside

    try:
        return JudgmentCache(path)
    except CacheCorruptError:
        if not rebuild or not path.exists():
            raise
    moved = set_aside(path)
    if out is not None:
        out.own(moved.name)
    print(f"note: the damaged judge cache was moved to {moved}; building a new one", file=sys.stderr)
    return JudgmentCache(path)


def _failure_reasons(failures) -> str:
    """'12 x HTTP 500, 3 x invalid reply' from the error column of the failed calls."""
    import re
    from collections import Counter

    def reason(error: str) -> str:
        text = re.sub(r"^\w+Error: ", "", str(error))
        text = re.sub(r"^gave up after \d+ attempt\(s\): ", "", text)
        if text.startswith("invalid reply"):
            return "invalid reply"
        return re.split(r"[:(;]", text, maxsplit=1)[0].strip()[:80] or "unknown"

    counts = Counter(reason(e) for e in failures["error"])
    return ", ".join(f"{n} x {r}" for r, n in counts.most_common())


def _load_results(path: str, items):
    """The --results table (models x items in [0, 1]), checked against the items file."""
    import pandas as pd

    from platinum_jax.rubric import validate_results

    try:
        results = pd.read_csv(path, index_col=0)
    except FileNotFoundError:
        raise FileNotFoundError(f"--results {path}: no such file") from None
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise ValueError(f"--results {path} is not a readable CSV ({exc})") from None
    results.columns = results.columns.astype(str)
    try:
        validate_results(results)
    except ValueError as exc:
        raise ValueError(f"--results {path}: {exc}") from None
    ids = [str(i) for i in items.index]
    missing = [i for i in ids if i not in results.columns]
    extra = [c for c in results.columns if c not in ids]
    if missing or extra:
        raise ValueError(
            f"--results {path}: its columns must be the item ids of the items file; missing "
            f"{missing[:5]}, not in the items file {extra[:5]}"
        )
    return results


def _write_outputs(args, out, res, items, concepts, results) -> int:
    import numpy as np
    import pandas as pd

    from platinum_jax.judge import audit, write_report
    from platinum_jax.rubric import (
        certify,
        item_weights,
        model_weights,
        quality_factors,
        ranking_change,
    )

    cs = res.concept_scores
    rule = "threshold" if args.threshold is not None else "appendix"
    cert = certify(res.strengths, cs[["W", "K", "N"]], rule=rule, threshold=args.threshold, allow_missing=True)
    S = res.strengths.copy()
    S.columns = [f"S_{c}" for c in S.columns]
    items_out = cert[["platinum_score", "certified", "concept", "certifying_concept", "complete"]].join(S.astype("Int64"))
    out.write("items.csv", items_out.to_csv, index_label="item_id")
    concepts_out = concepts.to_frame().join(cs)
    concepts_out.insert(4, "Q", quality_factors(cs[["W", "K", "N"]], allow_missing=True))
    out.write("concepts.csv", concepts_out.to_csv, index_label="concept")

    notes = []
    if args.samples > 1 and args.temperature == 0:
        notes.append(f"--samples {args.samples} at temperature 0: replies are usually identical, so the "
                     "recorded agreement is close to 1 by construction; use --temperature > 0 to sample")
    weights = pd.DataFrame({"uniform_weight": np.full(len(items_out), 1.0 / len(items_out))}, index=items_out.index)
    complete = bool(cert["complete"].all()) and not cs[["W", "K", "N"]].isna().any().any()
    if complete:
        weights["rubric_weight"] = item_weights(cert)
        try:
            weights["model_weight"] = model_weights(res.strengths, cs[["W", "K", "N"]])
        except ValueError as exc:
            weights["model_weight"] = np.nan
            notes.append(f"model weights not computed: {exc}")
    else:
        weights["rubric_weight"] = np.nan
        weights["model_weight"] = np.nan
        notes.append("weights not computed: some judge calls failed (see failures); a plain rerun retries "
                     "rate limits, server errors and timeouts, --retry-failed also redoes invalid replies")
    out.write("weights.csv", weights.to_csv, index_label="item_id")
    out.write("judgments.csv", res.records.drop(columns=["key"]).to_csv, index=False)

    if args.results:
        if not complete:
            notes.append("rankings not compared: the weights are incomplete")
        else:
            schemes = {"rubric": weights["rubric_weight"]}
            if weights["model_weight"].notna().all():
                schemes["model"] = weights["model_weight"]
            rc = ranking_change(results, schemes)
            out.write("rankings.csv", rc.scores.join(rc.ranks.add_suffix("_rank")).to_csv,
                      index_label="model")
            notes.append("ranking change vs uniform averaging: " + "; ".join(
                f"{name}: Kendall tau {r.kendall_tau:.3f}, {int(r.models_moved)} model(s) moved"
                for name, r in rc.kendall.iterrows()))
    if args.expert:
        rep = audit(res, args.expert)
        out.write("audit.csv", rep.agreement.to_csv)
        out.write("review.csv", rep.review.to_csv, index=False)
        notes.append("agreement with expert labels: " + "; ".join(
            f"{j}/{f}: exact {r.exact_agreement:.2f}, kappa {r.qw_kappa:.2f} (n={r.n_labelled})"
            for (j, f), r in rep.agreement.iterrows() if r.n_labelled))
    rule_text = f"P_i >= {args.threshold:g}" if rule == "threshold" else "W >= 4, K in {low, medium}, S >= 2"
    out.write("report.html", lambda path: write_report(
        path, cert, concepts_out, rule=rule_text, stats=res.stats, failures=res.failures,
        threshold=args.threshold, notes=notes))
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    n_cert = int(cert["certified"].fillna(False).astype(bool).sum())
    st = res.stats
    print(f"{n_cert} of {len(cert)} items certified platinum; calls made {st['calls_made']}, "
          f"cached {st['cached']}, failed {st['failed']}; wrote {out.path}/items.csv, concepts.csv, "
          f"weights.csv, judgments.csv, report.html")
    if st["failed"]:
        print(f"platinum-jax certify: {st['failed']} judge call(s) failed "
              f"({_failure_reasons(res.failures)}); the results are incomplete. Rerun the same "
              "command with --overwrite to ask them again (--retry-failed also redoes invalid "
              "replies); finished calls come from the cache", file=sys.stderr)
        return 3
    return 0
