"""Leaderboard scale: 10^8 sparse binary responses read from Parquet, a 2PL fitted, outputs
written, in one process; then 10^6 new subjects scored against the frozen items.

Data: ``--subjects`` x ``--items`` cells (default 40,000 x 10,000), each observed with
probability ``1 - --missing`` (default 0.75 missing, so 10^8 responses), responses from a 2PL
(abilities ~ N(0, 1), difficulties ~ N(0, 1), discriminations ~ LogNormal(0, 0.3^2)). The
Parquet file (integer subject and item labels, int8 responses) is written block by block of
subjects with pyarrow's ``ParquetWriter`` (one row group per block), never as one frame.

Fit: a fresh process runs ``fit_streamed_2pl(path)`` (the file read in record batches into one
byte per cell, Bock-Aitkin EM on 61 even nodes, EAP abilities) and writes ``items.csv``,
``subjects.csv`` and ``fit.json``. Reported: the process's wall time from launch (Python and
JAX start-up, compilation, reading, fitting, writing) and CPU time (user + system: on a
shared machine the wall time stretches with the load, the CPU time much less), its peak
resident memory
(``ru_maxrss``), the EM steps, and recovery: Pearson r of the discriminations, difficulties and
abilities with the simulation's truth. ``--cli`` runs the same fit as
``platinum-jax fit PATH --model 2pl --method marginal --stream --out DIR`` instead.

``--default-path`` runs ``platinum-jax fit PATH --model 2pl --method marginal --out DIR``,
without ``--stream``: the command reads the file's metadata, finds that the default path (a
response table, then the marginal EM's row layout, about 290 GB at 10^8 responses) cannot fit
in memory and the streamed one can, says so and streams (``fit.json``: ``layout_chosen``).

Scoring (``--score-subjects``, default 10^6, 0 to skip): that many new subjects answer
``--score-items`` of the calibrated items (default 100, every cell observed), held as codes in
memory; ``score_streamed_2pl`` gives each an EAP ability, SD and 95% interval against the items
the fit wrote. Reported: time, peak memory, r(ability, truth) and the share of true abilities
inside their intervals.

The machine's load average is printed with every figure (the CPU may be shared). Ends with one
JSON line per measurement.

    python benchmarks/bench_stream.py --subjects 4000 --items 1000     # 10^6 responses
    python benchmarks/bench_stream.py                                  # 10^8 responses
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _load():
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f}, {five:.2f}, {fifteen:.2f}"


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def truth(n_s, n_i, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n_s), rng.normal(size=n_i), np.exp(rng.normal(0.0, 0.3, n_i))


def write_parquet(path, n_s, n_i, missing, seed, block=1000):
    """The responses, block by block of subjects, as one row group each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    theta, b, a = truth(n_s, n_i, seed)
    rng = np.random.default_rng(seed + 1)
    schema = pa.schema([("subject", pa.int32()), ("item", pa.int32()), ("response", pa.int8())])
    n = 0
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for start in range(0, n_s, block):
            th = theta[start:start + block]
            keep = rng.random((th.size, n_i)) >= missing
            s, i = np.nonzero(keep)
            p = 1.0 / (1.0 + np.exp(-a[i] * (th[s] - b[i])))
            y = (rng.random(s.size) < p).astype(np.int8)
            writer.write_table(pa.table({"subject": (s + start).astype(np.int32),
                                         "item": i.astype(np.int32), "response": y},
                                        schema=schema))
            n += s.size
    return n


def fit_worker(path, out, em="scale"):
    t0 = time.perf_counter()
    from platinum_jax import enable_float64

    enable_float64()
    from platinum_jax.inference import fit_streamed_2pl

    res = fit_streamed_2pl(path, em=em)
    res.write(out)
    keys = ("iterations", "scale_steps", "expanded_steps", "steps_replaced", "seconds_read",
            "seconds_total", "block_rows", "marginal_log_lik")
    print(json.dumps({"seconds_in_process": time.perf_counter() - t0, "peak_mib": _peak_mib(),
                      **{k: res.diagnostics[k] for k in keys if k in res.diagnostics},
                      "converged": res.converged}))


def score_worker(items_csv, n_s, n_i_score, seed, out):
    from platinum_jax import enable_float64

    enable_float64()
    import pandas as pd

    from platinum_jax.data import CodedResponses
    from platinum_jax.inference import score_streamed_2pl

    items = pd.read_csv(items_csv, index_col="item")
    n_all = len(items)
    rng = np.random.default_rng(seed + 2)
    theta = rng.normal(size=n_s)
    which = np.sort(rng.choice(n_all, n_i_score, replace=False))
    # the truth of the calibration's items, by label (integer labels 0 .. n_items - 1)
    _, b_true, a_true = truth(int(os.environ["BENCH_STREAM_FIT_SUBJECTS"]), n_all, seed)
    b, a = b_true[which], a_true[which]
    rows = -(-n_s // 256) * 256
    codes = np.zeros((rows, n_i_score), np.int8)
    for start in range(0, n_s, 100_000):
        th = theta[start:start + 100_000]
        p = 1.0 / (1.0 + np.exp(-a[None] * (th[:, None] - b[None])))
        codes[start:start + th.size] = (rng.random(p.shape) < p) + 1
    responses = CodedResponses(codes, pd.Index(np.arange(n_s), name="subject"),
                               pd.Index(items.index[which], name="item"), n_s * n_i_score)
    t0 = time.perf_counter()
    scores = score_streamed_2pl(responses, items)
    seconds = time.perf_counter() - t0
    inside = float(np.mean((scores["lower"].to_numpy() <= theta)
                           & (theta <= scores["upper"].to_numpy())))
    print(json.dumps({"seconds": seconds, "peak_mib": _peak_mib(),
                      "r_ability": float(np.corrcoef(scores["ability"], theta)[0, 1]),
                      "interval_coverage": inside}))


def _last_json(text):
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--subjects", type=int, default=40_000)
    p.add_argument("--items", type=int, default=10_000)
    p.add_argument("--missing", type=float, default=0.75)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cli", action="store_true",
                   help="run `platinum-jax import tidy --stream` then `platinum-jax fit "
                   "--stream` (two processes, both timed) instead of one Python process")
    p.add_argument("--default-path", action="store_true",
                   help="run `platinum-jax fit PATH --model 2pl --method marginal` without "
                   "--stream on the written file: the command sees, from the file's metadata, "
                   "that the default layout cannot fit in memory and streams (fit.json's "
                   "layout_chosen says why)")
    p.add_argument("--em", choices=("scale", "squarem"), default="scale",
                   help="the streamed fit's way to plain EM's fixed point (default scale)")
    p.add_argument("--score-subjects", type=int, default=1_000_000)
    p.add_argument("--score-items", type=int, default=100)
    p.add_argument("--keep", default=None, help="write the data and outputs here (kept)")
    p.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        if args.worker[0] == "fit":
            fit_worker(args.worker[1], args.worker[2], args.worker[3])
        else:
            score_worker(args.worker[1], int(args.worker[2]), int(args.worker[3]),
                         int(args.worker[4]), args.worker[5])
        return
    if not 0.0 <= args.missing < 1.0:
        p.error(f"--missing must be in [0, 1) (got {args.missing})")
    rows = []
    with tempfile.TemporaryDirectory(dir=args.keep) as tmp:
        tmp = Path(tmp)
        data = tmp / "responses.parquet"
        t0 = time.perf_counter()
        n = write_parquet(data, args.subjects, args.items, args.missing, args.seed)
        print(f"# {os.cpu_count()} CPU cores; python {sys.version.split()[0]}; "
              f"{time.strftime('%Y-%m-%d %H:%M')}")
        print(f"data: {n:,} responses, {args.subjects:,} x {args.items:,} "
              f"({args.missing:.0%} missing), Parquet {data.stat().st_size / 2**20:,.0f} MiB "
              f"written in {time.perf_counter() - t0:.1f} s ({_load()})", flush=True)
        out = tmp / "fit"
        if args.default_path:
            exe = str(Path(sys.executable).with_name("platinum-jax"))
            cmds = [["/usr/bin/time", "-f", "PEAK_KIB %M", exe, "fit", str(data), "--model",
                     "2pl", "--method", "marginal", "--out", str(out)]]
        elif args.cli:
            exe = str(Path(sys.executable).with_name("platinum-jax"))
            coded = tmp / "coded.parquet"
            cmds = [[exe, "import", "tidy", str(data), "--stream", "--out", str(coded)],
                    [exe, "fit", str(coded), "--model", "2pl", "--method", "marginal",
                     "--stream", "--out", str(out)]]
            cmds = [["/usr/bin/time", "-f", "PEAK_KIB %M", *c] for c in cmds]
        else:
            cmds = [[sys.executable, __file__, "--worker", "fit", str(data), str(out), args.em]]
        print(f"fit ({_load()} at launch)", flush=True)
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        peaks = []
        for cmd in cmds:
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"{cmd[-8:]} failed:\n{proc.stderr[-3000:]}")
            if args.cli or args.default_path:
                peaks.append(float(proc.stderr.split("PEAK_KIB")[-1].split()[0]) / 1024.0)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if args.default_path:
            chosen = json.loads((out / "fit.json").read_text())["diagnostics"]
            info = {"peak_mib": peaks[0], "layout_chosen": chosen.get("layout_chosen"),
                    "fit_stdout": next(ln for ln in proc.stdout.splitlines() if ln.startswith("model"))}
        elif args.cli:
            info = {"peak_mib": max(peaks), "peak_mib_import": peaks[0],
                    "peak_mib_fit": peaks[1], "fit_stdout": next(ln for ln in proc.stdout.splitlines() if ln.startswith("model"))}
        else:
            info = _last_json(proc.stdout)
        import pandas as pd

        theta, b, a = truth(args.subjects, args.items, args.seed)
        items = pd.read_csv(out / "items.csv", index_col="item").sort_index()
        subjects = pd.read_csv(out / "subjects.csv", index_col="subject").sort_index()
        r_a = float(np.corrcoef(items["discrimination"], a[items.index])[0, 1])
        r_b = float(np.corrcoef(items["difficulty"], b[items.index])[0, 1])
        r_t = float(np.corrcoef(subjects["ability"], theta[subjects.index])[0, 1])
        print(f"fit: whole process {wall:.1f} s ({cpu:.1f} s CPU), peak {info['peak_mib']:,.0f} MiB, "
              f"r(a) {r_a:.4f}, r(b) {r_b:.4f}, r(ability) {r_t:.4f}; {info} ({_load()} at end)",
              flush=True)
        rows.append({"name": f"stream_fit_{args.subjects}x{args.items}_{n}",
                     "whole_process_s": wall, "cpu_s": cpu, "peak_mib": info["peak_mib"], "r_a": r_a,
                     "r_b": r_b, "r_ability": r_t, "cli": args.cli,
                     "default_path": args.default_path, "em": args.em,
                     "load_1min": os.getloadavg()[0]})
        if args.score_subjects:
            env = {**os.environ, "BENCH_STREAM_FIT_SUBJECTS": str(args.subjects)}
            print(f"score ({_load()} at launch)", flush=True)
            proc = subprocess.run([sys.executable, __file__, "--worker", "score",
                                   str(out / "items.csv"), str(args.score_subjects),
                                   str(args.score_items), str(args.seed), str(tmp)],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                sys.exit(f"scoring failed:\n{proc.stderr[-3000:]}")
            info = _last_json(proc.stdout)
            print(f"score: {args.score_subjects:,} subjects x {args.score_items} items in "
                  f"{info['seconds']:.1f} s, peak {info['peak_mib']:,.0f} MiB, r(ability) "
                  f"{info['r_ability']:.4f}, 95% interval coverage "
                  f"{info['interval_coverage']:.3f} ({_load()})")
            rows.append({"name": f"stream_score_{args.score_subjects}x{args.score_items}",
                         **info, "load_1min": os.getloadavg()[0]})
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
