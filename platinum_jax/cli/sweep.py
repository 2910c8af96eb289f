"""``platinum-jax sweep``: sensitivity sweeps over the primitives from the command line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

DESCRIPTION = """\
Sweep the optimal aggregation weights v* = (M + r Sigma)^-1 M w over a grid of primitives
and write the results (netCDF) and figures (PNG).

Axes (combine any; the grid is their full product):
  --r SPEC            lab risk aversion r >= 0
  --kappa SPEC        uniform cost change M -> M / kappa, kappa > 0
  --delta SPEC        cheaper concept:  M -> M + delta p_j p_j^T for --concept j
  --noise-scale SPEC  noisier concept:  sigma_j -> s sigma_j (--noise-concept j; all if omitted)

SPEC is START:STOP:NUM (evenly spaced), START:STOP:NUM:log (log spaced, START > 0),
a comma list 0.5,1,2, or one number.  Axes that keep the concept basis (all of the above)
run on the spectral fast path: one eigendecomposition, then one O(m^2) mat-vec per grid
point (measured on a CPU: about x2 time per doubling of the items, m = 25 to 400).

The sweep is computed in chunks of --chunk-size points by one compiled function; every
finished chunk is written to the chunk store OUT/chunks (netCDF, one file per chunk) or
OUT/chunks.zarr (--store-format zarr), so an interrupted run continues with --resume.
Results: OUT/sweep.nc (xarray; open with xarray.open_dataset), OUT/summary.json and
PNG figures (heat maps of each item's weight, weight curves, measurement shift).
With --no-dataset the results stay in the chunk store only: no in-memory copy of the grid and
no OUT/sweep.nc (for grids too big for either); the store opens with xarray as it is
(xarray.open_zarr(OUT/chunks.zarr), or the chunk files concatenated along "point").
OUT must be empty unless --resume (same sweep) or --overwrite (start afresh) is given.  Every
stored chunk carries the sweep's fingerprint, its index and checksums: on --resume a chunk that
does not match is recomputed, with a warning naming it.  --resume never deletes a store it
cannot reuse (another --store-format, other axes or settings): it stops and says why.
"""

EPILOG = """\
examples:
  platinum-jax sweep --r 0.1:10:50:log --kappa 0.5:4:20 --out sweeps
      weights of the 20 demo items over risk aversion and cost scale (1000 points)
  platinum-jax sweep --r 0.1:10:50:log --kappa 0.5:4:20 --delta 0:2:10 --concept 0 --out big
      adds a cost reduction along concept 0 (10000 points; figures fix the other axes)
  platinum-jax sweep --primitives world.npz --r 0.5,1,2 --kappa 1:3:5 --summary-only
      your own primitives: .npz or .json with arrays A, C, Sigma, w and scalar r
  platinum-jax sweep --r 0.1:10:50:log --kappa 0.5:4:20 --out sweeps --resume
      finish a sweep that was interrupted, reusing its finished chunks
  platinum-jax sweep --r 0.01:100:1000:log --kappa 0.25:8:1000 --store-format zarr --no-dataset
      10^6 points streamed to OUT/chunks.zarr only (memory: one chunk at a time)
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep", help="sensitivity sweeps of v*, welfare and platinum flags over r, kappa, delta",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--primitives", help=".npz or .json file with A, C, Sigma, w, r "
                   "(default: the synthetic demo world)")
    p.add_argument("--seed", type=int, default=0, help="seed of the demo world (default 0)")
    p.add_argument("--r", dest="r_spec", metavar="SPEC", help="risk-aversion values")
    p.add_argument("--kappa", metavar="SPEC", help="uniform cost-scale values (> 0)")
    p.add_argument("--delta", metavar="SPEC", help="rank-one cost change along --concept")
    p.add_argument("--concept", type=int, default=0, help="concept index for --delta (default 0)")
    p.add_argument("--noise-scale", metavar="SPEC", help="noise scale values (> 0)")
    p.add_argument("--noise-concept", type=int, default=None,
                   help="concept index for --noise-scale (default: scale all of Sigma)")
    p.add_argument("--method", choices=("auto", "fast", "general"), default="auto",
                   help="evaluation path (default auto: fast when the axes allow it)")
    p.add_argument("--chunk-size", type=int, default=None, help="grid points per compiled call")
    p.add_argument("--summary-only", action="store_true",
                   help="keep per-point summaries of v* (max, argmax, norms) instead of all weights")
    p.add_argument("--platinum", action="store_true", help="also keep platinum flags per point")
    p.add_argument("--tau-w", type=float, default=0.3, help="welfare-alignment threshold (0,1)")
    p.add_argument("--tau-m", type=float, default=0.4, help="item-loading threshold (0,1)")
    p.add_argument("--tau-e", type=float, default=2.0, help="signal-to-noise-cost threshold > 0")
    p.add_argument("--store-format", choices=("nc", "zarr"), default="nc",
                   help="format of the chunk store in OUT (default nc)")
    p.add_argument("--out", default="sweep_output", help="output directory (default sweep_output)")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted sweep in OUT, reusing finished chunks (each is "
                   "checked against the sweep, its index and its checksum first)")
    p.add_argument("--overwrite", action="store_true",
                   help="start afresh in an OUT that holds an earlier sweep (its chunks and "
                   "outputs are removed; files this command did not write are never touched)")
    p.add_argument("--no-dataset", action="store_true",
                   help="keep the results in the chunk store only: no in-memory copy and no "
                   "OUT/sweep.nc (figures and summary read the store)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    p.set_defaults(func=run)


def parse_values(option: str, spec: str):
    """Grid values from ``START:STOP:NUM[:log]``, ``a,b,c`` or a single number."""
    import numpy as np

    text = spec.strip()
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] not in ("log", "lin")):
                raise ValueError
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
            if num < 1:
                raise ValueError
            if len(parts) == 4 and parts[3] == "log":
                if start <= 0 or stop <= 0:
                    raise ValueError(f"{option} {spec!r}: log spacing needs START and STOP > 0")
                return np.geomspace(start, stop, num)
            return np.linspace(start, stop, num)
        return np.array([float(x) for x in text.split(",")])
    except ValueError as exc:
        if str(exc).startswith(option):
            raise
        raise ValueError(
            f"{option} {spec!r} is not a grid; write START:STOP:NUM, START:STOP:NUM:log, "
            "a comma list like 0.5,1,2, or one number"
        ) from None


def load_primitives(path: str):
    """Primitives and item names from ``.npz`` / ``.json`` with ``A, C, Sigma, w, r`` (+ ``items``)."""
    import numpy as np

    from platinum_jax.agency import Primitives

    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"--primitives {path}: no such file")
    if file.suffix == ".npz":
        with np.load(file, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    elif file.suffix == ".json":
        try:
            arrays = json.loads(file.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"--primitives {path}: not valid JSON ({exc})") from None
        if not isinstance(arrays, dict):
            raise ValueError(f"--primitives {path}: expected a JSON object with A, C, Sigma, w, r")
    else:
        raise ValueError(f"--primitives {path}: use a .npz or .json file")
    missing = [k for k in ("A", "C", "Sigma", "w", "r") if k not in arrays]
    if missing:
        raise KeyError(f"--primitives {path}: missing {missing}; the file needs A, C, Sigma, w, r")
    prims = Primitives(*(np.asarray(arrays[k], dtype=float) for k in ("A", "C", "Sigma", "w")),
                       float(np.asarray(arrays["r"])))
    items = arrays.get("items")
    return prims, (None if items is None else [str(i) for i in np.asarray(items).tolist()])


_STORES = {"nc": ("chunks", "netCDF"), "zarr": ("chunks.zarr", "Zarr")}


def _unusable_store(out: Path, fmt: str) -> str | None:
    """Why ``--resume`` with ``--store-format fmt`` cannot go on in ``out``: it holds the chunk
    store of the other format, which this run could not reuse and which finishing the run
    would remove."""
    other = "zarr" if fmt == "nc" else "nc"
    name, kind = _STORES[other]
    path = out / name
    if not path.exists():
        return None
    if other == "nc":
        held = f"{len(list(path.glob('chunk_*.nc')))} chunk file(s)"
    else:
        try:
            import numpy as np
            import zarr

            held = f"{int(np.count_nonzero(zarr.open_group(str(path), mode='r')['done'][:]))} "\
                "finished chunk(s)"
        except Exception:  # unreadable or zarr missing: it is still not this run's to remove
            held = "its chunks"
    return (f"--resume --store-format {fmt}: {out} holds the {kind} chunk store of an earlier "
            f"run ({path}, {held}), which a {_STORES[fmt][1]} store cannot reuse; nothing was "
            f"changed. To continue that sweep rerun with --store-format {other} --resume; to "
            f"start afresh in {_STORES[fmt][1]} pass --overwrite instead of --resume (this "
            f"removes {path}), or choose a new --out")


def _where(out: Path, store_name: str, fmt: str, no_dataset: bool) -> dict:
    """Where the results of a run are and how to open them (for summary.json and the user)."""
    store = out / store_name
    if fmt == "zarr":
        how = f"xarray.open_zarr({str(store)!r}, consolidated=False)"
    else:
        how = (f"xarray.concat([xarray.open_dataset(f) for f in sorted(glob.glob("
               f"{str(store / 'chunk_*.nc')!r})], dim='point')")
    doc = {"store": store_name, "store_format": fmt, "open_store": how,
           "store_layout": "outputs over 'point' (the grid in C order of the axes) with the "
                           "axis values per point; .set_index(point=[axes]).unstack('point') "
                           "gives the grid"}
    return ({"results": store_name, **doc} if no_dataset
            else {"results": "sweep.nc", "open_results": "xarray.open_dataset('sweep.nc')", **doc})


def run(args: argparse.Namespace) -> int:

    from platinum_jax._runtime import enable_float64

    enable_float64()  # sweeps compare tiny weight changes
    import numpy as np

    from platinum_jax._outputs import output_directory
    from platinum_jax.sweeps import (
        ConceptShift,
        CostScale,
        EffortCost,
        NoiseScale,
        Platinum,
        RiskAversion,
        Weights,
        WeightSummary,
        Welfare,
        plot_measurement_shift,
        plot_weight_curves,
        plot_weight_heatmaps,
        sweep,
    )

    if args.primitives:
        base, items = load_primitives(args.primitives)
        noise = np.diag(np.asarray(base.Sigma))
    else:
        from platinum_jax.datasets import demo_world

        world = demo_world(seed=args.seed)
        base, items = world.primitives, world.item_names
        # Each demo item measures one concept; its noise is that concept's sigma.
        noise = world.concepts["sigma"].reindex(world.items["concept"]).to_numpy()
    axes = []
    if args.r_spec:
        axes.append(RiskAversion(parse_values("--r", args.r_spec)))
    if args.kappa:
        axes.append(CostScale(parse_values("--kappa", args.kappa)))
    if args.delta:
        axes.append(ConceptShift(args.concept, parse_values("--delta", args.delta)))
    if args.noise_scale:
        axes.append(NoiseScale(parse_values("--noise-scale", args.noise_scale),
                               concept=args.noise_concept))
    if not axes:
        raise ValueError("no axis given; add at least one of --r, --kappa, --delta, --noise-scale "
                         "(e.g. --r 0.1:10:50:log)")
    outputs = [WeightSummary() if args.summary_only else Weights(), Welfare(), EffortCost()]
    if args.platinum:
        outputs.append(Platinum(args.tau_w, args.tau_m, args.tau_e))

    store_name = "chunks.zarr" if args.store_format == "zarr" else "chunks"
    # --resume keeps the finished chunks and replaces the sweep's own final outputs.
    with output_directory(args.out, "sweep", overwrite=args.overwrite or args.resume,
                          keep=(store_name,) if args.resume else (),
                          hint="or --resume to continue the sweep stored there") as out:
        from platinum_jax import _distributed
        from platinum_jax._distributed import is_writer

        # A resume in one format must not remove the other format's store (finishing the run
        # replaces the directory's earlier outputs): stop before anything is computed.
        problem = _unusable_store(out.path, args.store_format) if (
            args.resume and is_writer()) else None
        _distributed.agree(problem)
        if problem is not None:
            raise ValueError(problem)
        # In a multi-process run the chunk store is process 0's; the others write nothing.
        store = out.own(store_name) if is_writer() else None
        t0 = time.perf_counter()
        ds = sweep(base, axes, outputs, chunk_size=args.chunk_size, store=store, resume=args.resume,
                   method=args.method, items=items, keep_in_memory=not args.no_dataset)
        seconds = time.perf_counter() - t0
        if not args.no_dataset:
            out.write("sweep.nc", ds.to_netcdf, engine="h5netcdf")
        print(f"{ds.attrs['path']} path ({ds.attrs['path_reason']}); "
              f"{int(np.prod([len(a.values) for a in axes]))} points in {seconds:.2f} s; "
              f"{ds.attrs['chunks_computed']} chunk(s) computed, {ds.attrs['chunks_reused']} reused")
        if not args.no_dataset and ds.nbytes > 1 << 30:
            print(f"note: the results took {ds.nbytes / 2**30:.1f} GiB in memory and again in "
                  "sweep.nc; --no-dataset keeps them in the chunk store only", file=sys.stderr)

        figures = []
        if not args.no_plots and "v" in ds:
            names = [a.name for a in axes]
            out.write("weight_curves.png", lambda path: plot_weight_curves(ds, path=path))
            figures.append("weight_curves.png")
            if len(names) >= 2:
                out.write("weight_heatmaps.png",
                          lambda path: plot_weight_heatmaps(ds, names[0], names[1], path=path))
                figures.append("weight_heatmaps.png")
            if "kappa" in names:
                out.write("measurement_shift.png",
                          lambda path: plot_measurement_shift(ds, noise, path=path))
                figures.append("measurement_shift.png")
        summary = {
            "path": ds.attrs["path"], "path_reason": ds.attrs["path_reason"],
            "grid": {a.name: len(a.values) for a in axes}, "seconds": round(seconds, 3),
            "chunk_size": ds.attrs["chunk_size"], "chunks_computed": ds.attrs["chunks_computed"],
            "chunks_reused": ds.attrs["chunks_reused"], "variables": sorted(ds.data_vars),
            **_where(out.path, store_name, args.store_format, args.no_dataset),
        }
        out.write_text("summary.json", json.dumps(summary, indent=1))
    out = out.path
    results = out / (store_name if args.no_dataset else "sweep.nc")
    print(f"wrote {results}{' (the results, chunk store only)' if args.no_dataset else ''}, "
          f"{out / 'summary.json'}" + (f" and {len(figures)} figure(s)" if figures else ""))
    if args.no_dataset:
        print(f"open the results with {summary['open_store']}")
    return 0
