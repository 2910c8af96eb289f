"""Output directories: atomic files, one run at a time, no silent overwrite, no stale files;
and sweep chunk stores that refuse or recompute chunks that are not what they claim to be."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from platinum_jax._outputs import LOCK, MANIFEST, atomic_write, output_directory
from platinum_jax.cli import main
from platinum_jax.datasets import demo_world
from platinum_jax.sweeps import CostScale, RiskAversion, sweep

SWEEP = ["sweep", "--r", "0.5,1,2", "--kappa", "1,2", "--chunk-size", "2", "--no-plots"]


def _spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(path, proc, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the writing process ended early: {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the writing process never got ready")
        time.sleep(0.02)


def test_failed_writer_leaves_the_old_file_and_no_partial(tmp_path):
    target = tmp_path / "capabilities.csv"
    target.write_text("old complete file\n")

    def broken(path):
        path.write_text("half a fi")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, broken)
    assert target.read_text() == "old complete file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capabilities.csv"]


def test_out_naming_a_file_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "results.txt"
    blocker.write_text("keep me")
    assert main([*SWEEP, "--out", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert "is an existing file" in err and "Traceback" not in err
    assert blocker.read_text() == "keep me"


def test_non_empty_directory_needs_overwrite_which_removes_only_owned_files(tmp_path, capsys):
    out = tmp_path / "run"
    with output_directory(out, "stitch") as od:
        od.write_text("fit.json", "{}")
        od.write_text("capabilities_component2.csv", "stale")
    with pytest.raises(ValueError, match="already holds the results of an earlier `stitch` run"):
        with output_directory(out, "stitch"):
            pass
    (out / "notes.txt").write_text("the user's own file")
    with pytest.raises(ValueError, match=r"did not write \(notes.txt\)"):
        with output_directory(out, "stitch", overwrite=True):
            pass
    assert (out / "notes.txt").exists() and (out / "fit.json").exists()  # nothing was removed
    (out / "notes.txt").unlink()
    with output_directory(out, "stitch", overwrite=True) as od:
        od.write_text("fit.json", '{"new": 1}')
    # the earlier run's file that this run did not write is gone, not left stale
    assert sorted(p.name for p in out.iterdir()) == sorted([LOCK, MANIFEST, "fit.json"])
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["files"] == ["fit.json"] and manifest["complete"] is True
    # another command's outputs are not this command's to remove
    with pytest.raises(ValueError, match="did not write"):
        with output_directory(out, "demo", overwrite=True):
            pass

    # the same rules through a command
    cli_out = tmp_path / "sweep"
    assert main([*SWEEP, "--out", str(cli_out)]) == 0
    assert main([*SWEEP, "--out", str(cli_out)]) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and "--resume" in err and "Traceback" not in err
    assert main([*SWEEP, "--out", str(cli_out), "--overwrite"]) == 0


def test_kill_during_a_write_loses_nothing_complete_and_mixes_nothing(tmp_path):
    out, ready = tmp_path / "fit", tmp_path / "ready"
    with output_directory(out, "stitch") as od:  # an earlier run on other data
        od.write_text("capabilities.csv", "model,capability\nold,1.0\n")
        od.write_text("fit.json", '{"data": "old"}')
    proc = _spawn("""
        import sys, time
        from pathlib import Path
        from platinum_jax._outputs import output_directory
        with output_directory(sys.argv[1], "stitch", overwrite=True) as od:
            def slow(path):
                with open(path, "w") as fh:
                    fh.write("model,capability\\n")
                    fh.flush()
                    Path(sys.argv[2]).touch()
                    time.sleep(60)
            od.write("capabilities.csv", slow)
    """, out, ready)
    _wait_for(ready, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # the earlier run's results exactly as they were, nothing of the killed run in them
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [LOCK, MANIFEST, "capabilities.csv", "fit.json"])
    assert (out / "capabilities.csv").read_text() == "model,capability\nold,1.0\n"
    assert json.loads((out / MANIFEST).read_text())["complete"] is True
    assert [p.name for p in tmp_path.iterdir() if "staging" in p.name]  # its staging is beside
    with pytest.raises(ValueError, match="already holds"):
        with output_directory(out, "stitch"):
            pass
    with output_directory(out, "stitch", overwrite=True) as od:
        od.write_text("capabilities.csv", "model,capability\nnew,2.0\n")
        assert (out / "fit.json").exists()  # the old results stay until the new ones exist
    assert sorted(p.name for p in out.iterdir()) == sorted([LOCK, MANIFEST, "capabilities.csv"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit", "ready"]  # stale staging gone


def test_a_failed_overwrite_leaves_the_previous_results_exactly(tmp_path):
    out = tmp_path / "fit"
    with output_directory(out, "fit") as od:
        od.write_text("subjects.csv", "old subjects\n")
        od.write("draws.npz", Path.write_bytes, b"old draws")
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK}
    with pytest.raises(ValueError, match="the model failed"):
        with output_directory(out, "fit", overwrite=True) as od:
            od.write_text("subjects.csv", "new subjects, never complete\n")
            raise ValueError("the model failed")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit"]


def test_a_run_killed_between_the_two_renames_is_undone_by_the_next(tmp_path):
    out = tmp_path / "fit"
    with output_directory(out, "fit") as od:
        od.write_text("subjects.csv", "old\n")
    # what a run killed after renaming the target aside and before renaming its staging in
    # leaves: no target, an aside copy and a complete staging directory
    aside = tmp_path / ".fit.platinum-jax-old-99999999"
    out.rename(aside)
    staged = tmp_path / ".fit.platinum-jax-staging-99999999"
    staged.mkdir()
    (staged / "subjects.csv").write_text("new\n")
    with pytest.raises(ValueError, match="already holds the results of an earlier `fit` run"):
        with output_directory(out, "fit"):
            pass
    assert (out / "subjects.csv").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit"]


def test_single_file_outputs_lock_and_swap_together(tmp_path):
    from platinum_jax._outputs import output_files

    out, side = tmp_path / "table.csv", tmp_path / "table.missing.csv"
    out.write_text("old table\n")
    side.write_text("old side\n")
    with pytest.raises(ValueError, match="already exist"):
        with output_files(out, companions=[side]):
            pass
    with pytest.raises(RuntimeError, match="reader failed"):
        with output_files(out, overwrite=True, companions=[side]) as write:
            write(out, Path.write_text, "new table\n")
            raise RuntimeError("reader failed")
    assert (out.read_text(), side.read_text()) == ("old table\n", "old side\n")
    with output_files(out, overwrite=True, companions=[side]) as write:
        with pytest.raises(ValueError, match="being written by another platinum-jax run"):
            with output_files(out, overwrite=True):
                pass
        write(out, Path.write_text, "new table\n")
        write(side, Path.write_text, "new side\n")
        assert out.read_text() == "old table\n"  # nothing moves before the end
    assert (out.read_text(), side.read_text()) == ("new table\n", "new side\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv", "table.missing.csv"]


def test_two_imports_to_the_same_out_do_not_both_succeed(tmp_path):
    """Started together, without --overwrite: one writes the table, the other fails by name."""
    out = tmp_path / "r.csv"
    logs = Path(__file__).parents[1] / "fixtures" / "logs" / "lm_eval"
    argv = [sys.executable, "-m", "platinum_jax.cli", "import", "lm-eval", str(logs), "--metric",
            "acc_norm", "--metric", "exact_match", "--out", str(out)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read().decode()) for p in procs]
    codes = sorted(rc for rc, _ in results)
    assert codes == [0, 2], results
    err = next(e for rc, e in results if rc == 2)
    assert "being written by another platinum-jax run" in err or "already exist" in err
    assert "Traceback" not in err


def test_a_second_run_into_a_directory_being_written_is_refused(tmp_path, capsys):
    out, ready = tmp_path / "shared", tmp_path / "ready"
    proc = _spawn("""
        import sys, time
        from pathlib import Path
        from platinum_jax._outputs import output_directory
        with output_directory(sys.argv[1], "sweep") as od:
            od.write_text("summary.json", "{}")
            Path(sys.argv[2]).touch()
            time.sleep(60)
    """, out, ready)
    try:
        _wait_for(ready, proc)
        for extra in ([], ["--overwrite"], ["--resume"]):
            assert main([*SWEEP, "--out", str(out), *extra]) == 2
            assert "being written by another platinum-jax run" in capsys.readouterr().err
        # the running one's summary.json is staged, not yet in the directory
        assert sorted(p.name for p in out.iterdir()) == sorted([LOCK, MANIFEST])
    finally:
        proc.kill()
        proc.wait(timeout=30)
    # the lock dies with its process: the directory can be taken over
    assert main([*SWEEP, "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ready", "shared"]


def test_resume_replaces_sweep_nc_atomically_while_a_reader_holds_it(tmp_path):
    out = tmp_path / "run"
    assert main([*SWEEP, "--out", str(out)]) == 0
    before = (out / "sweep.nc").read_bytes()
    with open(out / "sweep.nc", "rb") as reader:  # another process reading the result
        assert main([*SWEEP, "--out", str(out), "--resume"]) == 0
        assert reader.read() == before  # its file was replaced, not truncated under it
    assert (out / "sweep.nc").stat().st_size > 0
    import xarray as xr

    with xr.open_dataset(out / "sweep.nc", engine="h5netcdf") as ds:
        M, S, w = (np.asarray(x) for x in (demo_world(0).primitives.M, demo_world(0).primitives.Sigma,
                                           demo_world(0).primitives.w))
        v = np.linalg.solve(M / 2 + 0.5 * S, M / 2 @ w)
        np.testing.assert_allclose(ds["v"].sel(r=0.5, kappa=2.0).values, v, atol=1e-10)


# ------------------------------------------------------------------- sweep chunk seals
AXES = [RiskAversion([0.5, 1.0, 2.0]), CostScale([1.0, 2.0])]


@pytest.fixture(scope="module")
def problem():
    import jax

    jax.config.update("jax_enable_x64", True)
    return demo_world(0).primitives


@pytest.fixture(scope="module")
def reference(problem):
    return sweep(problem, AXES, chunk_size=2, progress=False)


def _resume(problem, store, axes=AXES, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = sweep(problem, axes, chunk_size=2, store=store, resume=True, progress=False, **kw)
    return ds, " ".join(str(w.message) for w in caught)


def test_deleted_manifest_cannot_lend_chunks_to_another_sweep(problem, tmp_path):
    store = tmp_path / "chunks"
    sweep(problem, AXES, chunk_size=2, store=store, progress=False)
    (store / "manifest.json").unlink()
    other = [RiskAversion([5.0, 6.0, 7.0]), CostScale([1.0, 2.0])]  # same shape, other values
    with pytest.raises(ValueError, match="different sweep"):
        sweep(problem, other, chunk_size=2, store=store, resume=True, progress=False)
    ds, said = _resume(problem, store)  # the sweep the chunks belong to still resumes them
    assert ds.attrs["chunks_reused"] == 3 and said == ""


def test_copied_or_edited_netcdf_chunks_are_recomputed(problem, reference, tmp_path):
    store = tmp_path / "chunks"
    sweep(problem, AXES, chunk_size=2, store=store, progress=False)
    (store / "chunk_000002.nc").write_bytes((store / "chunk_000000.nc").read_bytes())
    (store / "chunk_000001.nc").write_bytes(b"not a netCDF file")
    ds, said = _resume(problem, store)
    assert "chunk 2 (it holds chunk 0, not chunk 2" in said and "chunk 1 (it cannot be read" in said
    assert ds.attrs["chunks_computed"] == 2 and ds.attrs["chunks_reused"] == 1
    for name in ("v", "welfare"):
        np.testing.assert_array_equal(ds[name].values, reference[name].values)


def test_copied_or_deleted_zarr_chunks_are_recomputed(problem, reference, tmp_path):
    store = tmp_path / "chunks.zarr"
    sweep(problem, AXES, chunk_size=2, store=store, progress=False)
    data = store / "v" / "c"
    (data / "1" / "0").unlink()  # read back as the fill value, zeros
    (data / "2" / "0").write_bytes((data / "0" / "0").read_bytes())
    ds, said = _resume(problem, store)
    assert "chunk 1 (the checksum of 'v'" in said and "chunk 2 (the checksum of 'v'" in said
    assert ds.attrs["chunks_computed"] == 2
    np.testing.assert_array_equal(ds["v"].values, reference["v"].values)


@pytest.mark.parametrize("fmt", ["nc", "zarr"])
def test_reading_a_tampered_chunk_lazily_is_refused_by_name(problem, tmp_path, fmt):
    store = tmp_path / ("lazy.zarr" if fmt == "zarr" else "lazy")
    ds = sweep(problem, AXES, chunk_size=2, store=store, keep_in_memory=False, progress=False)
    if fmt == "zarr":
        (store / "welfare" / "c" / "1").unlink()
    else:
        path = store / "chunk_000001.nc"
        path.write_bytes((store / "chunk_000000.nc").read_bytes())
    with pytest.raises(ValueError, match="chunk 1 failed its check"):
        ds["welfare"].values  # noqa: B018


def test_a_run_that_fails_before_writing_leaves_no_directory(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(RuntimeError, match="fit failed"):
        with output_directory(out, "stitch"):
            raise RuntimeError("fit failed")
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()  # a directory the user made is left where it was
    with pytest.raises(RuntimeError):
        with output_directory(kept, "stitch"):
            raise RuntimeError("fit failed")
    assert kept.is_dir()


def test_a_refused_run_leaves_the_users_directory_exactly_as_it_was(tmp_path, capsys):
    """No lock file, manifest or directory of a run that was refused: not at the claim (a
    directory holding the user's files), not after it (a bad argument found once --out is
    claimed), not for a path whose folders the run would have created."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's own file")
    assert main([*SWEEP, "--out", str(mine)]) == 2
    assert "already holds files (notes.txt)" in capsys.readouterr().err
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]

    data = tmp_path / "scores.csv"
    data.write_text("model,benchmark,score\nm0,b0,0.5\n")
    empty, nested = tmp_path / "empty", tmp_path / "new" / "deeper" / "out"
    empty.mkdir()
    for out in (empty, nested):
        # analyze checks --capabilities against the analysis after claiming --out
        assert main(["analyze", "robustness", str(data), "--capabilities", str(data),
                     "--out", str(out)]) == 2
        assert "--capabilities cannot be used with robustness" in capsys.readouterr().err
    assert list(empty.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "mine", "scores.csv"]

    with pytest.raises(ValueError, match="late"):  # the same through the library
        with output_directory(empty, "stitch") as od:
            od.write_text("fit.json", "{}")
            raise ValueError("a late refusal")
    with output_directory(empty, "stitch") as od:
        od.abandon()
    assert list(empty.iterdir()) == []


def _interrupting_fit(monkeypatch):
    import platinum_jax.stitching as stitching

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C during the fit, in-process

    monkeypatch.setattr(stitching, "fit_stitching", interrupted)


def test_an_interrupted_run_leaves_the_directory_as_it_was(tmp_path, monkeypatch, capsys):
    """Ctrl-C during a fresh run: the --out it created is gone, an empty directory it was given
    stays empty, as the interrupted line says; in-process (KeyboardInterrupt) and through the
    real process's handler (which cleans up with discard_in_flight, then exits)."""
    from platinum_jax._outputs import discard_in_flight

    data = tmp_path / "scores.csv"
    data.write_text("model,benchmark,score\nm0,b0,0.5\nm1,b0,0.7\n")
    _interrupting_fit(monkeypatch)
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "fresh", empty):
        assert main(["analyze", "trends", str(data), "--anchor", "b0", "--out", str(out)]) == 130
        assert "--out is as it was before this run" in capsys.readouterr().err
    assert list(empty.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "scores.csv"]

    for out in (tmp_path / "new" / "fit", empty):  # what the hard stop does before it exits
        with pytest.raises(KeyboardInterrupt):
            with output_directory(out, "fit") as od:
                od.write_text("subjects.csv", "half a fit\n")
                assert discard_in_flight()
                raise KeyboardInterrupt
    assert list(empty.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "scores.csv"]


def test_ctrl_c_in_a_real_process_removes_the_out_it_created(tmp_path):
    data, out, ready = tmp_path / "scores.csv", tmp_path / "fresh", tmp_path / "ready"
    data.write_text("model,benchmark,score\nm0,b0,0.5\nm1,b0,0.7\n")
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import signal, sys, time
        from pathlib import Path
        import platinum_jax.stitching as stitching
        ready, data, out = sys.argv[1:]
        def slow(*args, **kwargs):
            Path(ready).touch()
            time.sleep(60)
        stitching.fit_stitching = slow
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.argv = ["platinum-jax", "analyze", "trends", data, "--anchor", "b0", "--out", out]
        from platinum_jax.cli import main
        sys.exit(main())
    """), str(ready), str(data), str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(ready, proc)
        assert out.is_dir()  # claimed while the fit runs
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
    finally:
        proc.kill()
    err = proc.stderr.read().decode()
    assert rc == 130, err
    assert err.strip().splitlines()[-1].startswith("platinum-jax analyze: interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ready", "scores.csv"]
