"""The commands lose nothing and say no wrong thing: Ctrl-C, overwrite, bad responses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from platinum_jax._outputs import LOCK, output_directory
from platinum_jax.cli import main


def _responses(path: Path, n_subjects=12, n_items=6, seed=0) -> Path:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_subjects), np.linspace(-1, 1, n_items)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    y = (rng.random(p.shape) < p).astype(float)
    pd.DataFrame([(f"m{s}", f"q{i}", y[s, i]) for s in range(n_subjects) for i in range(n_items)],
                 columns=["subject", "item", "response"]).to_csv(path, index=False)
    return path


def _old_fit(out: Path) -> dict:
    with output_directory(out, "fit") as od:
        od.write_text("subjects.csv", "subject,ability\nold,0.5\n")
        od.write_text("fit.json", '{"method": "laplace"}\n')
        od.write("draws.npz", Path.write_bytes, b"the earlier draws")
    return {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK}


def test_ctrl_c_during_a_fit_stops_at_once_with_130_and_keeps_the_old_results(tmp_path):
    data, out = _responses(tmp_path / "r.csv"), tmp_path / "fit"
    before = _old_fit(out)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PLATINUM_JAX_CACHE": "off"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "platinum_jax.cli", "fit", str(data), "--method", "nuts",
         "--chains", "1", "--warmup", "200000", "--samples", "200000", "--save-draws",
         "--overwrite", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = proc.stdout.readline().decode()  # "read ..." comes just before the fit
    assert line.startswith("read"), (line, proc.stderr.read().decode() if proc.poll() else "")
    time.sleep(1.0)  # compiling or sampling: compiled work in flight either way
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        rc = proc.wait(timeout=20)
    finally:
        proc.kill()
    elapsed = time.monotonic() - t0
    err = proc.stderr.read().decode()
    assert rc == 130, err
    assert elapsed < 10
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("platinum-jax fit: interrupted")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit", "r.csv"]


def test_ctrl_c_during_stitch_bayes_keeps_the_old_posterior(tmp_path):
    rng = np.random.default_rng(0)
    c, d = rng.normal(size=12), np.r_[0.0, rng.normal(size=3)]
    y = 1 / (1 + np.exp(-(c[:, None] - d[None]))) + 0.02 * rng.normal(size=(12, 4))
    data = tmp_path / "scores.csv"
    pd.DataFrame({"model": np.repeat([f"m{m}" for m in range(12)], 4),
                  "benchmark": np.tile([f"b{b}" for b in range(4)], 12),
                  "score": np.clip(y, 0, 1).ravel()}).to_csv(data, index=False)
    out = tmp_path / "bayes"
    with output_directory(out, "stitch-bayes") as od:
        od.write("posterior.nc", Path.write_bytes, b"the earlier posterior")
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK}
    proc = subprocess.Popen(
        [sys.executable, "-m", "platinum_jax.cli", "stitch-bayes", str(data),
         "--anchor-benchmark", "b0", "--chains", "1", "--warmup", "200000", "--samples",
         "200000", "--overwrite", "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "PLATINUM_JAX_CACHE": "off"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not any("staging" in p.name for p in tmp_path.iterdir()):  # claimed before sampling
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        rc = proc.wait(timeout=20)
    finally:
        proc.kill()
    err = proc.stderr.read().decode()
    assert rc == 130 and time.monotonic() - t0 < 10, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("platinum-jax stitch-bayes: interrupted")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bayes", "scores.csv"]


def test_a_failing_overwrite_of_a_fit_keeps_the_old_fit(tmp_path, capsys):
    """`fit --model mirt --method marginal --overwrite` fails (marginal is for one ability)
    and must leave the earlier fit, draws included."""
    data, out = _responses(tmp_path / "r.csv"), tmp_path / "fit"
    before = _old_fit(out)
    assert main(["fit", str(data), "--model", "mirt", "--method", "marginal", "--overwrite",
                 "--out", str(out)]) == 2
    assert "error" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != LOCK} == before


# ------------------------------------------------------------------ responses, subsets, items
@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A 2PL fit (MAP, with draws.npz) of 24 subjects x 8 items, and its responses."""
    root = tmp_path_factory.mktemp("fit")
    data = _responses(root / "r.csv", n_subjects=24, n_items=8, seed=3)
    assert main(["fit", str(data), "--save-draws", "--out", str(root / "fit")]) == 0
    return root / "fit", data


def _new_subjects(path: Path, values, items=("q0", "q1", "q2", "q3"), trials=None) -> Path:
    rows = [{"subject": f"new{s}", "item": i, "response": v}
            for s, row in enumerate(values) for i, v in zip(items, row, strict=True)]
    frame = pd.DataFrame(rows)
    if trials is not None:
        frame["trials"] = trials
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("values", "trials", "says"), [
    ([[0, 100, 100, 0]], None, "these look like percentages; divide by 100"),
    ([[1e6, 0, 1, 1]], None, "max 1e+06"),
    ([[3, 5, 0, 2]], 5, "counts of successes; the response is the fraction: divide each "
                        "response by its trials"),
])
def test_score_refuses_responses_the_model_cannot_give(fitted, tmp_path, capsys, values,
                                                         trials, says):
    fit_dir, _ = fitted
    new = _new_subjects(tmp_path / "new.csv", values, trials=trials)
    assert main(["score", str(fit_dir), str(new), "--dispersion", "1",
                 "--estimator", "item-model",
                 "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "new.csv, column response" in err and says in err, err
    assert not (tmp_path / "s").exists()


def test_fit_gives_the_counts_hint_not_divide_by_100_with_a_trials_column(tmp_path, capsys):
    path = _new_subjects(tmp_path / "k.csv", [[3, 5, 0, 2], [1, 4, 5, 0]], trials=5)
    assert main(["fit", str(path), "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert "divide each response by its trials" in err and "divide by 100" not in err


def test_rosetta_scores_in_percent_are_refused_by_fit_and_score(tmp_path, capsys):
    frac = _new_subjects(tmp_path / "frac.csv", [[0.2, 0.5, 0.6, 0.9], [0.1, 0.3, 0.7, 0.8],
                                                  [0.4, 0.4, 0.5, 0.95]])
    pct = pd.read_csv(frac).assign(response=lambda f: f.response * 100)
    pct.to_csv(tmp_path / "pct.csv", index=False)
    rosetta = ["--model", "rosetta", "--anchor-benchmark", "q0"]
    assert main(["fit", str(tmp_path / "pct.csv"), *rosetta, "--out", str(tmp_path / "p")]) == 2
    assert "pct.csv, column response: the rosetta model reads scores in [0, 1]" in \
        capsys.readouterr().err
    assert main(["fit", str(frac), *rosetta, "--out", str(tmp_path / "f")]) == 0
    assert main(["score", str(tmp_path / "f"), str(tmp_path / "pct.csv"), "--dispersion", "1",
                 "--estimator", "item-model",
                 "--out", str(tmp_path / "s")]) == 2
    assert "divide by 100" in capsys.readouterr().err


def test_score_subset_refuses_samples_that_are_not_random(fitted, tmp_path, capsys):
    fit_dir, data = fitted
    frame = pd.read_csv(data)
    for method, code in (("fisher", 2), ("random", 0)):
        out = tmp_path / method
        assert main(["subset", str(fit_dir), "--k", "4", "--method", method,
                     "--out", str(out)]) == 0
        chosen = pd.read_csv(out / "subset.csv", index_col="item")
        assert set(chosen["method"]) == {method}
        answers = frame[frame.item.isin(chosen.index) & frame.subject.isin(["m0", "m1"])]
        answers.to_csv(tmp_path / "a.csv", index=False)
        assert main(["score", str(fit_dir), str(tmp_path / "a.csv"), "--data", str(data),
                     "--estimator", "assisted", "--subset", str(out / "subset.csv"), "--out", str(tmp_path / f"s_{method}")
                     ]) == code
    err = capsys.readouterr().err
    assert "--method fisher, not a probability sample" in err
    legacy = pd.read_csv(tmp_path / "random" / "subset.csv").drop(columns="method")
    legacy.to_csv(tmp_path / "legacy.csv", index=False)
    assert main(["score", str(fit_dir), str(tmp_path / "a.csv"), "--data", str(data),
                 "--estimator", "assisted", "--subset", str(tmp_path / "legacy.csv"), "--out", str(tmp_path / "s2")]) == 2
    assert "does not record how its items were chosen" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [np.nan, -0.7, 0.0])
def test_a_damaged_discrimination_is_named_by_subset_and_score(fitted, tmp_path, capsys, bad):
    fit_dir, _ = fitted
    import shutil

    copy = tmp_path / "fit"
    shutil.copytree(fit_dir, copy)
    items = pd.read_csv(copy / "items.csv", index_col=0)
    items.loc["q5", "discrimination"] = bad
    items.to_csv(copy / "items.csv")
    new = _new_subjects(tmp_path / "new.csv", [[1, 0, 1, 1]])
    assert main(["subset", str(copy), "--k", "3", "--out", str(tmp_path / "a")]) == 2
    assert main(["score", str(copy), str(new), "--dispersion", "1",
                 "--estimator", "item-model",
                 "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("items.csv, column discrimination") == 2 and "q5" in err, err


def test_an_edited_parameter_table_is_named_by_its_checksum(fitted, tmp_path, capsys):
    """Values that pass their own checks but differ from what the fit wrote: fit.json's size and
    SHA-256 of items.csv no longer match, and subset names the file instead of using it."""
    fit_dir, _ = fitted
    import shutil

    copy = tmp_path / "fit"
    shutil.copytree(fit_dir, copy)
    items = pd.read_csv(copy / "items.csv", index_col=0)
    items["discrimination"] = items["discrimination"] * 1.5
    items.to_csv(copy / "items.csv")
    assert main(["subset", str(copy), "--k", "3", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "items.csv is not the file" in err and "edited or replaced" in err, err
    assert not (tmp_path / "a").exists()


def test_score_intervals_stay_in_the_response_range(fitted, tmp_path):
    """Fractions average to a score in [0, 1]; so must every interval, for the item-model
    estimate and the model-assisted one (few items, extreme answers: wide intervals)."""
    fit_dir, data = fitted
    assert main(["subset", str(fit_dir), "--k", "3", "--method", "random", "--seed", "1",
                 "--out", str(tmp_path / "sub")]) == 0
    drawn = pd.read_csv(tmp_path / "sub" / "subset.csv")["item"].tolist()
    values = [[1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 1, 0]]
    new = _new_subjects(tmp_path / "new.csv", values, items=drawn)
    for extra, name in ((["--estimator", "item-model"], "plain"),
                        (["--estimator", "assisted", "--subset",
                          str(tmp_path / "sub" / "subset.csv")], "assisted")):
        assert main(["score", str(fit_dir), str(new), "--dispersion", "3", *extra,
                     "--out", str(tmp_path / name)]) == 0
        s = pd.read_csv(tmp_path / name / "scores.csv", index_col=0)
        assert (s.score_lo >= 0).all() and (s.score_hi <= 1).all(), s
        assert (s.score_lo <= s.score).all() and (s.score <= s.score_hi).all()


def test_score_reports_each_subjects_mdad_from_its_items(fitted, tmp_path):
    """scores.csv carries the minimum detectable ability difference of each subject's items:
    (z_0.975 + z_0.8) sqrt(2) / sqrt(I(theta)), I the 2PL test information sum a^2 p (1 - p)
    over the items the subject answered (here recomputed with NumPy/SciPy from items.csv)."""
    from scipy import stats

    fit_dir, _ = fitted
    new = _new_subjects(tmp_path / "new.csv", [[1, 0, 1, 1], [0, 0, 1, 0]])
    assert main(["score", str(fit_dir), str(new), "--dispersion", "1",
                 "--estimator", "item-model",
                 "--out", str(tmp_path / "s")]) == 0
    s = pd.read_csv(tmp_path / "s" / "scores.csv", index_col=0)
    items = pd.read_csv(fit_dir / "items.csv", index_col=0).loc[["q0", "q1", "q2", "q3"]]
    a, b = items["discrimination"].to_numpy(), items["difficulty"].to_numpy()
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    for theta, got in zip(s["ability"], s["mdad_ability"], strict=True):
        p = 1 / (1 + np.exp(-a * (theta - b)))
        want = z * np.sqrt(2) / np.sqrt(np.sum(a**2 * p * (1 - p)))
        assert got == pytest.approx(want, rel=0.02)  # the bank interpolates on its ability grid
    assert (s["mdad_score"] > 0).all()


# ------------------------------------------------------------------ fit directories defend themselves
@pytest.fixture(scope="module")
def laplace_dirs(fitted, tmp_path_factory):
    """``a``: the 2PL fit with draws.npz; ``c``: a 1PL fit of the same responses."""
    root = tmp_path_factory.mktemp("draws")
    (root / "a").symlink_to(fitted[0], target_is_directory=True)
    assert main(["fit", str(fitted[1]), "--model", "1pl", "--save-draws",
                 "--out", str(root / "c")]) in (0, 1)
    return root


def test_fit_json_records_every_file_and_the_draws(laplace_dirs):
    import hashlib
    import json

    d = laplace_dirs / "a"
    doc = json.loads((d / "fit.json").read_text())
    names = sorted(p.name for p in d.iterdir() if not p.name.startswith(".") and
                   p.name != "fit.json")
    assert sorted(doc["files"]) == names == ["draws.npz", "globals.csv", "items.csv",
                                             "subjects.csv"]
    for name in names:
        data = (d / name).read_bytes()
        assert doc["files"][name] == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert (doc["draws"]["model"], doc["draws"]["method"]) == ("2pl", "map")
    with np.load(d / "draws.npz") as z:
        assert doc["draws"]["shapes"]["theta_subjects"] == list(z["theta_subjects"].shape)
    assert doc["draws"]["shapes"]["theta_subjects"] == [24, 1]  # one ability per subject
    assert doc["draws"]["shapes"]["theta_items"] == [8, 2]  # 8 items x (difficulty, slope)


@pytest.mark.parametrize(("damage", "says"), [
    ("truncate", "draws.npz is truncated or damaged"),
    ("empty", "draws.npz is empty"),
    ("1pl", "holds draws of the 1pl model, but"),
    ("other data", "is not the file"),
    ("fit.json", "fit.json cannot be read"),
])
def test_weights_names_the_draws_file_it_rejects(laplace_dirs, tmp_path, capsys, damage, says):
    import shutil

    from platinum_jax.inference import read_fit

    d = tmp_path / "fit"
    shutil.copytree(laplace_dirs / "a", d)
    read_fit(d)  # the intact directory reads
    draws = d / "draws.npz"
    if damage == "truncate":
        draws.write_bytes(draws.read_bytes()[: draws.stat().st_size // 2])
    elif damage == "empty":
        draws.write_bytes(b"")
    elif damage == "1pl":
        shutil.copy(laplace_dirs / "c" / "draws.npz", draws)
    elif damage == "other data":  # same model, method and shapes; other responses
        with np.load(draws) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["response"] = 1.0 - arrays["response"]
        np.savez_compressed(draws, **arrays)
    else:
        (d / "fit.json").write_text('{"model": {"name": "2pl"')
    assert main(["weights", str(d), "--out", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err
    assert not (tmp_path / "w").exists()


# ------------------------------------------------------------------ smaller cases
def _csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_all_zero_weights_are_refused_by_name(tmp_path, capsys):
    data = _csv(tmp_path / "w.csv", "subject,item,response,weight\na,x,1,0\na,y,0,0\nb,x,0,0\n"
                                    "b,y,1,0\n")
    assert main(["fit", str(data), "--out", str(tmp_path / "f")]) == 2
    assert "w.csv: every weight is 0" in capsys.readouterr().err


def test_names_differing_by_whitespace_are_one_subject_in_fit_and_import(tmp_path, capsys):
    # the shape of the 1PL fit in laplace_dirs, so the two fits are one compiled program
    data = _responses(tmp_path / "r.csv", n_subjects=24, n_items=8)
    frame = pd.read_csv(data)
    frame.loc[frame.index[0], "subject"] = "m0 "  # the same model, spelt with a trailing space
    frame.to_csv(data, index=False)
    with pytest.warns(UserWarning, match="stray whitespace"):
        assert main(["fit", str(data), "--model", "1pl", "--out", str(tmp_path / "f")]) in (0, 1)
    assert sorted(pd.read_csv(tmp_path / "f" / "subjects.csv", index_col=0).index) == \
        sorted(f"m{s}" for s in range(24))
    with pytest.warns(UserWarning, match="stray whitespace"):
        assert main(["import", "tidy", str(data), "--out", str(tmp_path / "t.csv")]) == 0
    assert pd.read_csv(tmp_path / "t.csv").subject.nunique() == 24


def test_messages_name_the_file(fitted, laplace_dirs, tmp_path, capsys):
    extra = _csv(tmp_path / "extra.csv", "subject,item,response\na,x,1\na,y,0,7\n")
    assert main(["fit", str(extra), "--out", str(tmp_path / "f")]) == 2
    assert "extra.csv is not a well-formed CSV" in capsys.readouterr().err
    import shutil

    fit_dir = tmp_path / "fit"
    shutil.copytree(fitted[0], fit_dir)
    (fit_dir / "fit.json").write_text("{not json")
    assert main(["subset", str(fit_dir), "--k", "2", "--out", str(tmp_path / "s")]) == 2
    assert "fit.json is not the JSON summary" in capsys.readouterr().err
    empty = _csv(tmp_path / "tw.csv", "")
    assert main(["weights", str(laplace_dirs / "a"), "--target-weights", str(empty),
                 "--out", str(tmp_path / "w")]) == 2
    assert "--target-weights" in (err := capsys.readouterr().err) and "tw.csv is empty" in err


def test_degenerate_data_and_fractions_get_a_note(tmp_path, capsys):
    from platinum_jax.data import ResponseTable
    from platinum_jax.models import make_model
    from platinum_jax.models._check import response_notes

    def notes(text):
        return " ".join(response_notes(make_model("1pl"), ResponseTable.read(
            _csv(tmp_path / "d.csv", text))))

    assert "one subject" in notes("subject,item,response\na,x,1\na,y,0\na,z,1\n")
    assert "one item" in notes("subject,item,response\na,x,1\nb,x,0\n")
    assert notes("subject,item,response\na,x,1\na,y,0\nb,x,0\nb,y,1\n") == ""
    # through the command: on stderr and in fit.json
    data = _csv(tmp_path / "d.csv", "subject,item,response\na,x,0\na,y,0\nb,x,0.5\nb,y,0\n"
                                    "c,x,0\nc,y,0\n")
    main(["fit", str(data), "--model", "1pl", "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err
    says = ("1 of 6 responses are fractions; the Bernoulli likelihood reads them as shares",)
    assert all(f"note: d.csv: {x}" in err for x in says), err
    import json

    recorded = json.loads((tmp_path / "f" / "fit.json").read_text())["diagnostics"]["notes"]
    assert any(says[0] in n for n in recorded)
    data = _csv(tmp_path / "z.csv", "subject,item,response\na,x,0\na,y,0\nb,x,0\nb,y,0\n")
    assert "every response is 0" in notes(data.read_text())


def test_an_unconverged_fit_used_downstream_gets_a_note(fitted, tmp_path, capsys):
    import json
    import shutil

    fit_dir = tmp_path / "fit"
    shutil.copytree(fitted[0], fit_dir)
    doc = json.loads((fit_dir / "fit.json").read_text())
    assert doc["converged"] is True
    assert main(["subset", str(fit_dir), "--k", "2", "--out", str(tmp_path / "a")]) == 0
    assert "did not converge" not in capsys.readouterr().err
    (fit_dir / "fit.json").write_text(json.dumps({**doc, "converged": False}))
    assert main(["subset", str(fit_dir), "--k", "2", "--out", str(tmp_path / "b")]) == 0
    assert "records a fit that did not converge" in capsys.readouterr().err


def test_partial_files_of_a_killed_import_are_cleaned_by_the_next(tmp_path):
    logs = Path(__file__).parents[1] / "fixtures" / "logs" / "lm_eval"
    out = tmp_path / "r.csv"
    stale = [tmp_path / ".r.csv.platinum-jax-staging-424242.csv",
             tmp_path / ".r.missing.csv.platinum-jax-staging-424242.csv"]
    for p in stale:
        p.write_text("half a tab")
    assert main(["import", "lm-eval", str(logs), "--metric", "acc_norm", "--metric",
                 "exact_match", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "r.csv", "r.metadata.csv", "r.missing.csv"]
