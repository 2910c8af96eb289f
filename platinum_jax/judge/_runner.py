"""Run the rubric judge over items x concepts: concurrency, caching, retries and aggregation.

For every judge and sample s = 0..samples-1 the runner asks one concept prompt per concept
(W_j, K_j, N_j) and one measurement prompt per (item, concept) pair (S_ij).  Finished calls go
straight into the SQLite cache, so a rerun skips them and an interrupted run resumes.  A call
is finished when it got a valid reply, a reply still invalid after the re-asks, or an HTTP
error that retrying cannot fix; a call that ran out of retries on transient errors (429, 5xx,
timeouts, dropped connections) is reported as failed in this run but not cached, so the next
run asks again.  Several samples / judges per cell are aggregated: the lower median for ordinal
scores (W, S; it is always a level of the scale) and the majority for the categorical K, N
(ties go to the more pessimistic level: higher cost, higher noise).  The share of replies that
agree with the aggregate is kept as the cell's agreement.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from platinum_jax.rubric import COST_LEVELS, NOISE_LEVELS, ConceptSet

from ._cache import JudgmentCache, call_key, prompt_hash
from ._prompts import (
    ReplyError,
    parse_concept_reply,
    parse_item_reply,
    render_concept_prompt,
    render_item_prompt,
)
from ._providers import (
    CancelledCall,
    JudgeConfig,
    PermanentError,
    Provider,
    RateLimiter,
    TransientError,
    make_provider,
)

__all__ = ["Judgments", "load_items", "run_judgments", "aggregate_ordinal", "aggregate_categorical"]

_CORRECTION = (
    "Your previous reply could not be used: {error}. Reply again with only a JSON object that "
    "matches the schema in the task, with values on the rubric scale."
)


def load_items(path: str | Path) -> pd.DataFrame:
    """Read ITEMS.jsonl: one object per line with ``item_id``, ``text`` and optional ``reference``.

    Blank lines are skipped; malformed JSON, missing or empty fields, non-text values and
    duplicate ids raise ``ValueError`` naming the line.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"items file {path} does not exist")
    rows, seen = [], {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path.name} line {lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{where}: expected a JSON object, got {type(obj).__name__}")
            for name in ("item_id", "text"):
                if name not in obj:
                    raise ValueError(f"{where}: missing field {name!r} (each line needs item_id and text)")
            item_id = obj["item_id"]
            if isinstance(item_id, bool) or not isinstance(item_id, str | int) or str(item_id).strip() == "":
                raise ValueError(f"{where}: item_id must be a non-empty string or integer, got {item_id!r}")
            item_id = str(item_id)
            if not isinstance(obj["text"], str) or not obj["text"].strip():
                raise ValueError(f"{where}: text of item {item_id!r} is empty or not a string")
            ref = obj.get("reference")
            if ref is not None and not isinstance(ref, str):
                raise ValueError(f"{where}: reference of item {item_id!r} must be a string or null")
            unknown = set(obj) - {"item_id", "text", "reference"}
            if unknown:
                raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: item_id, text, reference")
            if item_id in seen:
                raise ValueError(f"{where}: duplicate item_id {item_id!r} (first on line {seen[item_id]})")
            seen[item_id] = lineno
            rows.append({"item_id": item_id, "text": obj["text"], "reference": ref})
    if not rows:
        raise ValueError(f"items file {path} has no items")
    return pd.DataFrame(rows).set_index("item_id")


def aggregate_ordinal(values: Sequence[int]) -> tuple[float, float]:
    """Lower median of ordinal replies and the share equal to it (NaN, NaN if none)."""
    if len(values) == 0:
        return np.nan, np.nan
    v = sorted(values)
    med = v[(len(v) - 1) // 2]
    return float(med), float(np.mean(np.asarray(v) == med))


def aggregate_categorical(values: Sequence[str], levels: tuple[str, ...]) -> tuple[str | None, float]:
    """Majority level (ties -> the later, more pessimistic level) and its share."""
    if len(values) == 0:
        return None, np.nan
    counts = Counter(values)
    top = max(counts.values())
    winner = [lv for lv in levels if counts.get(lv, 0) == top][-1]
    return winner, top / len(values)


@dataclass(frozen=True)
class _Task:
    judge: JudgeConfig
    kind: str  # "concept" or "item"
    item_id: str | None
    concept: str
    sample: int
    prompt: str

    @property
    def settings(self) -> dict:
        return {**self.judge.sampling(), "sample": self.sample}

    @property
    def key(self) -> str:
        return call_key(self.judge.provider, self.judge.model, self.prompt, self.settings)


def _execute(task: _Task, provider: Provider) -> dict:
    """One judged cell: call, parse, re-ask on a bad reply; always returns a record."""
    parse = parse_concept_reply if task.kind == "concept" else parse_item_reply
    messages = [{"role": "user", "content": task.prompt}]
    raws: list[str] = []
    attempts, error, value, transient = 0, None, None, False
    for _ in range(task.judge.parse_retries + 1):
        try:
            text, absorbed = provider.chat(messages)
            attempts += 1 + absorbed
        except (TransientError, PermanentError) as exc:
            transient = isinstance(exc, TransientError)
            attempts += 1 + (task.judge.max_retries if transient else 0)
            error = f"{type(exc).__name__}: {exc}"
            break
        raws.append(text)
        try:
            value = parse(text)
            error = None
            break
        except ReplyError as exc:
            error = f"invalid reply: {exc}"
            messages = messages + [{"role": "assistant", "content": text},
                                   {"role": "user", "content": _CORRECTION.format(error=exc)}]
    return {
        "key": task.key, "provider": task.judge.provider, "model": task.judge.model,
        "prompt_sha256": prompt_hash(task.prompt), "settings": task.settings, "kind": task.kind,
        "item_id": task.item_id, "concept": task.concept, "sample": task.sample,
        "status": "ok" if value is not None else "failed", "value": value, "raw_replies": raws,
        "error": error, "attempts": attempts, "prompt": task.prompt, "transient": transient,
    }


def _is_final(rec: dict) -> bool:
    """Whether a cached record settles its call; False for a give-up on transient errors.

    Caches written before such give-ups were kept out of the store hold them as failed rows;
    their error text starts with the exception name, which identifies them.
    """
    return rec["status"] == "ok" or not str(rec.get("error") or "").startswith("TransientError:")


def _consistent(rec: dict, task: _Task) -> bool:
    """Whether a cached row still says what its raw reply says (the verdict is re-derived from
    the reply, so an edited value or reply cannot certify an item unnoticed)."""
    try:
        if rec.get("prompt_sha256") != prompt_hash(task.prompt) or rec.get("prompt") != task.prompt:
            return False
        raws = rec.get("raw_replies") or []
        if rec["status"] != "ok":
            return rec.get("value") is None
        parse = parse_concept_reply if task.kind == "concept" else parse_item_reply
        return bool(raws) and parse(raws[-1]) == rec.get("value")
    except (ReplyError, TypeError, KeyError, AttributeError):
        return False


@dataclass(frozen=True)
class Judgments:
    """Judge results: one record per call, plus aggregated rubric tables.

    ``records``: judge, kind, item_id, concept, sample, status, W/K/N/S, error, raw reply, cached.
    ``concept_scores``: per concept W, K, N (aggregated) with agreement and reply counts.
    ``strengths``: items x concepts S_ij (NaN where every reply failed).
    ``strength_agreement``: items x concepts share of replies equal to the aggregate.
    ``stats``: calls made this run, served from cache, failed (after retries).
    """

    records: pd.DataFrame
    concept_scores: pd.DataFrame
    strengths: pd.DataFrame
    strength_agreement: pd.DataFrame
    stats: dict

    @property
    def failures(self) -> pd.DataFrame:
        return self.records[self.records["status"] == "failed"]

    def for_judge(self, judge: str) -> Judgments:
        """The same tables aggregated over one judge's samples only."""
        if judge not in set(self.records["judge"]):
            raise KeyError(f"unknown judge {judge!r}; judges: {sorted(set(self.records['judge']))}")
        recs = self.records[self.records["judge"] == judge]
        return _aggregate(recs, list(self.concept_scores.index), list(self.strengths.index), self.stats)


def _records_frame(recs: list[dict]) -> pd.DataFrame:
    rows = []
    for r in recs:
        v = r["value"] or {}
        rows.append({
            "judge": f"{r['provider']}:{r['model']}", "kind": r["kind"], "item_id": r["item_id"],
            "concept": r["concept"], "sample": r["sample"], "status": r["status"],
            "W": v.get("W"), "K": v.get("K"), "N": v.get("N"), "S": v.get("S"),
            "rationale": v.get("rationale"), "error": r["error"],
            "raw_reply": r["raw_replies"][-1] if r["raw_replies"] else None,
            "attempts": r["attempts"], "cached": r.get("cached", False), "key": r["key"],
        })
    cols = ["judge", "kind", "item_id", "concept", "sample", "status", "W", "K", "N", "S",
            "rationale", "error", "raw_reply", "attempts", "cached", "key"]
    return pd.DataFrame(rows, columns=cols)


def _aggregate(records: pd.DataFrame, concepts: list[str], items: list[str], stats: dict) -> Judgments:
    ok = records[records["status"] == "ok"]
    crec = ok[ok["kind"] == "concept"]
    rows = []
    for c in concepts:
        sub = crec[crec["concept"] == c]
        W, w_ag = aggregate_ordinal([int(x) for x in sub["W"]])
        K, k_ag = aggregate_categorical(list(sub["K"]), COST_LEVELS)
        N, n_ag = aggregate_categorical(list(sub["N"]), NOISE_LEVELS)
        n_all = int(((records["kind"] == "concept") & (records["concept"] == c)).sum())
        rows.append({"W": None if np.isnan(W) else int(W), "K": K, "N": N, "W_agreement": w_ag,
                     "K_agreement": k_ag, "N_agreement": n_ag, "n_replies": len(sub),
                     "n_failed": n_all - len(sub)})
    cs = pd.DataFrame(rows, index=pd.Index(concepts, name="concept"))
    cs["W"] = cs["W"].astype("Int64")
    irec = ok[ok["kind"] == "item"]
    S = np.full((len(items), len(concepts)), np.nan)
    A = np.full_like(S, np.nan)
    groups = {k: [int(x) for x in g["S"]] for k, g in irec.groupby(["item_id", "concept"])}
    ipos = {i: a for a, i in enumerate(items)}
    cpos = {c: b for b, c in enumerate(concepts)}
    for (i, c), vals in groups.items():
        S[ipos[i], cpos[c]], A[ipos[i], cpos[c]] = aggregate_ordinal(vals)
    idx = pd.Index(items, name="item_id")
    col = pd.Index(concepts, name="concept")
    return Judgments(records=records.reset_index(drop=True), concept_scores=cs,
                     strengths=pd.DataFrame(S, index=idx, columns=col),
                     strength_agreement=pd.DataFrame(A, index=idx, columns=col), stats=dict(stats))


def _run_calls(todo: list[_Task], providers: dict, concurrency: int,
               save: Callable[[dict], None], stop: threading.Event, grace: float = 1.0) -> None:
    """Run ``todo`` on ``concurrency`` daemon threads, handing each record to ``save`` here.

    On Ctrl-C or an error ``stop`` is set: providers send nothing more, calls already on the
    wire get ``grace`` seconds to finish, everything finished is saved, and the function
    returns without waiting longer for an unresponsive server (daemon threads do not hold up
    the interpreter's exit).
    """
    if not todo:
        return
    tasks: queue.SimpleQueue = queue.SimpleQueue()
    for t in todo:
        tasks.put(t)
    done: queue.SimpleQueue = queue.SimpleQueue()
    busy = [0]
    busy_lock = threading.Lock()

    def worker() -> None:
        while not stop.is_set():
            try:
                t = tasks.get_nowait()
            except queue.Empty:
                return
            with busy_lock:
                busy[0] += 1
            try:
                done.put((_execute(t, providers[t.judge.name]), None))
            except CancelledCall:
                return
            except BaseException as exc:  # handed to the calling thread, which re-raises it
                done.put((None, exc))
                return
            finally:
                with busy_lock:
                    busy[0] -= 1

    def drain() -> None:
        while True:
            try:
                rec, exc = done.get_nowait()
            except queue.Empty:
                return
            if exc is None:
                save(rec)

    for k in range(min(concurrency, len(todo))):
        threading.Thread(target=worker, name=f"judge-call-{k}", daemon=True).start()
    remaining = len(todo)
    try:
        while remaining:
            try:
                rec, exc = done.get(timeout=0.1)  # short waits keep Ctrl-C prompt
            except queue.Empty:
                continue
            if exc is not None:
                raise exc
            save(rec)
            remaining -= 1
    except BaseException:
        stop.set()
        deadline = time.monotonic() + grace
        while busy[0] and time.monotonic() < deadline:  # calls on the wire may still land
            time.sleep(0.02)
        drain()
        raise


def run_judgments(
    items: pd.DataFrame,
    concepts: ConceptSet,
    judges: JudgeConfig | Sequence[JudgeConfig],
    *,
    samples: int = 1,
    cache: JudgmentCache | str | Path | None = None,
    concurrency: int = 4,
    rate_limit: float | None = None,
    retry_failed: bool = False,
    progress: bool = True,
    provider_factory: Callable[[JudgeConfig, RateLimiter], Provider] | None = None,
) -> Judgments:
    """Ask every judge ``samples`` times about every concept and every (item, concept) pair.

    ``items``: DataFrame indexed by item_id with ``text`` and optional ``reference`` (see
    :func:`load_items`).  ``cache``: a :class:`JudgmentCache` or a SQLite path; finished calls
    found there are not repeated (recorded failures neither, unless ``retry_failed``).  A call
    that used up ``max_retries`` on transient errors (429, 5xx, timeouts, connection errors) is
    reported as failed, with its error, but not cached: the next run asks it again.  Invalid
    replies (after ``parse_retries``) and other HTTP errors are cached as failures.
    ``samples``: replies per judge and cell.  With ``temperature=0`` (the default) most
    providers return the same reply every time, so the samples and their recorded agreement
    (then trivially 1) say little; set ``temperature > 0`` on the judges when sampling several
    times.  The cache key holds provider, model, prompt and sampling settings but not the base
    URL, so one cache file should serve one endpoint per model name.
    ``concurrency`` worker threads share one token bucket of ``rate_limit`` requests/second.
    A ``KeyboardInterrupt`` cancels pending calls; everything already finished is in the cache.
    """
    judges = [judges] if isinstance(judges, JudgeConfig) else list(judges)
    if not judges:
        raise ValueError("give at least one judge")
    if len({j.name for j in judges}) != len(judges):
        raise ValueError("the same judge (provider:model) is listed twice; use samples= for repeats")
    if int(samples) < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    if int(concurrency) < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if "text" not in items.columns:
        raise ValueError("items need a 'text' column (and an item_id index); use load_items for JSONL")
    if items.index.has_duplicates:
        raise ValueError(f"duplicate item ids: {items.index[items.index.duplicated()].unique().tolist()[:5]}")
    refs = items["reference"] if "reference" in items.columns else pd.Series(None, index=items.index)
    item_ids = [str(i) for i in items.index]

    tasks: list[_Task] = []
    for judge in judges:
        for s in range(int(samples)):
            for c in concepts:
                tasks.append(_Task(judge, "concept", None, c.name, s, render_concept_prompt(c.name, c.definition)))
            for iid, text, ref in zip(item_ids, items["text"], refs, strict=True):
                ref = None if ref is None or (isinstance(ref, float) and np.isnan(ref)) else ref
                for c in concepts:
                    tasks.append(_Task(judge, "item", iid, c.name, s,
                                       render_item_prompt(str(text), ref, c.name, c.definition)))

    own_cache = not isinstance(cache, JudgmentCache)
    store = JudgmentCache(cache) if own_cache else cache
    limiter = RateLimiter(rate_limit, burst=concurrency)
    factory = provider_factory or (lambda cfg, lim: make_provider(cfg, limiter=lim))
    stats = {"calls_made": 0, "cached": 0, "failed": 0, "http_requests": 0}
    records: list[dict] = []
    todo: list[_Task] = []
    stale = []
    for t in tasks:
        hit = store.get(t.key)
        if hit is not None and not _consistent(hit, t):
            stale.append(t)
            hit = None  # asked again; the fresh reply replaces the row
        if hit is not None and _is_final(hit) and (hit["status"] == "ok" or not retry_failed):
            hit["cached"] = True
            records.append(hit)
            stats["cached"] += 1
            stats["failed"] += hit["status"] == "failed"
        else:
            todo.append(t)

    if stale:
        where = ", ".join(f"{t.item_id or 'concept'}/{t.concept}" for t in stale[:5])
        warnings.warn(
            f"{len(stale)} cached judgment(s) disagree with their stored raw reply or prompt "
            f"(edited or damaged cache rows: {where}{', ...' if len(stale) > 5 else ''}); "
            "they are asked again", stacklevel=2)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), initial=stats["cached"], desc="judge calls", unit="call")
        bar.set_postfix(made=0, cached=stats["cached"], failed=stats["failed"])
    providers: dict[str, Provider] = {}
    stop = threading.Event()
    try:
        if todo:
            providers = {j.name: factory(j, limiter) for j in judges}
            for p in providers.values():
                if isinstance(getattr(p, "stop", None), threading.Event):
                    p.stop = stop

        def save(rec: dict) -> None:
            # A give-up on 429/5xx/timeouts says nothing about the reply: keep it out of the
            # cache so that a plain rerun tries the call again.  Only this (the calling) thread
            # writes the cache, so an interrupt never leaves a row half-written.
            if not rec["transient"]:
                store.put(rec)  # written as soon as it completes: nothing finished is lost
            rec["cached"] = False
            records.append(rec)
            stats["calls_made"] += 1
            stats["failed"] += rec["status"] == "failed"
            if bar is not None:
                bar.set_postfix(made=stats["calls_made"], cached=stats["cached"],
                                failed=stats["failed"], refresh=False)
                bar.update(1)

        _run_calls(todo, providers, int(concurrency), save, stop)
    finally:
        stop.set()  # nothing more is sent once the run ends, however it ends
        stats["http_requests"] = sum(p.requests for p in providers.values())
        if bar is not None:
            bar.close()
        if own_cache:
            store.close()
    frame = _records_frame(records)
    frame = frame.sort_values(["judge", "kind", "item_id", "concept", "sample"], na_position="first")
    return _aggregate(frame, list(concepts.names), item_ids, stats)
