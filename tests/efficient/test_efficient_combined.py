"""The shrunk difference estimate against its closed form (NumPy grid posterior), and the
cross-validated bias spread on worlds whose truth is known: new models that follow the item
model, and new models that depart from it on half of the items."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_expit
from scipy.stats import norm

from platinum_jax.data import ResponseTable
from platinum_jax.efficient import combined_scores, fit_bias_sd, item_bank, select_items
from platinum_jax.inference import Fit, Problem, simulate
from platinum_jax.models import TwoPL

N_SUBJECTS, N_ITEMS = 240, 40


@pytest.fixture(scope="module")
def world():
    """A 2PL world whose true parameters stand in for the fit (the item model is right)."""
    table, truth = simulate(TwoPL(), N_SUBJECTS, N_ITEMS, seed=7)
    fit = Fit(problem=Problem(TwoPL(), table), method="truth", theta=truth)
    return truth, item_bank(fit, dispersion=1.0), table


def _part(table, subjects, n_items=25):
    """The responses of ``subjects`` (positions) to the world's first ``n_items`` items: the
    tests that refit take their data here, so that no second world is simulated and every
    refit of 60 (or 30) subjects by 25 items is one compiled program."""
    frame = table.to_frame()[["subject", "item", "response"]]
    keep = frame.subject.isin(table.subjects[subjects]) & frame.item.isin(table.items[:n_items])
    return frame[keep]


def _frame(theta, b, a, shift, seed):
    """Bernoulli responses of subjects ``theta`` with ``shift`` (S, N) added on the logit."""
    rng = np.random.default_rng(seed)
    y = rng.random(shift.shape) < expit(a[None] * (theta[:, None] - b[None]) + shift)
    s, i = np.meshgrid(np.arange(len(theta)), np.arange(len(b)), indexing="ij")
    return pd.DataFrame({"subject": [f"n{j:03d}" for j in s.ravel()],
                         "item": [f"i{j:02d}" for j in i.ravel()],
                         "response": y.ravel().astype(float)})


def test_combined_score_matches_its_closed_form(world):
    truth, bank, _ = world
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    theta = np.random.default_rng(1).standard_normal(4)
    frame = _frame(theta, b, a, np.zeros((4, N_ITEMS)), seed=2)
    sel = select_items(bank, 12, "random", seed=3)
    responses = ResponseTable.from_frame(frame)
    grid = np.asarray(bank.grid)
    z = a[None] * (grid[:, None] - b[None])
    p = expit(z)
    tau = 0.05
    got = combined_scores(bank, responses, sel, bias_sd=tau, interval=0.8)
    for name, part in frame.groupby("subject"):
        y = part.set_index("item").response.reindex(bank.items).to_numpy()
        s = np.array([int(i[1:]) for i in sel.index])
        log = norm.logpdf(grid) + np.sum(y[s] * log_expit(z[:, s])
                                         + (1 - y[s]) * log_expit(-z[:, s]), axis=1)
        post = np.exp(log - log.max())
        post /= post.sum()
        mu = post @ p
        unseen = np.setdiff1d(np.arange(N_ITEMS), s)
        pred = (y[s].sum() + mu[unseen].sum()) / N_ITEMS
        e = y[s] - mu[s]
        k = len(s)
        v = e.var(ddof=1) / k  # equal weights: the sample variance over k
        lam = tau ** 2 / (tau ** 2 + v)
        est = pred + (1 - k / N_ITEMS) * lam * e.mean()
        sd = (1 - k / N_ITEMS) * np.sqrt(lam * v + e.var(ddof=1) / (N_ITEMS - k))
        row = got.loc[name]
        assert row.predicted == pytest.approx(pred, abs=1e-9)
        assert row.shrinkage == pytest.approx(lam, abs=1e-9)
        assert row.score == pytest.approx(est, abs=1e-9)
        assert row.score_se == pytest.approx(sd, abs=1e-9)
        assert row.score_hi - row.score == pytest.approx(norm.ppf(0.9) * sd, abs=1e-9)
        # The ends of the line: tau = 0 is the item-model estimate, tau = inf the
        # difference estimate with its finite-population-corrected variance.
        zero = combined_scores(bank, responses, sel, bias_sd=0.0).loc[name]
        inf = combined_scores(bank, responses, sel, bias_sd=np.inf).loc[name]
        assert zero.score == pytest.approx(pred, abs=1e-9)
        assert inf.score == pytest.approx(mu.mean() + e.mean(), abs=1e-9)
        assert inf.score_se == pytest.approx(np.sqrt((1 - k / N_ITEMS) * e.var(ddof=1) / k),
                                             abs=1e-9)


def test_bad_input_is_named(world):
    truth, bank, _ = world
    frame = _frame(np.zeros(2), truth.items[:, 0], np.exp(truth.items[:, 1]),
                   np.zeros((2, N_ITEMS)), seed=4)
    sel = select_items(bank, 5, "random")
    short = ResponseTable.from_frame(frame[~frame.item.isin(sel.index[:1])])
    with pytest.raises(ValueError, match="no response to subset item"):
        combined_scores(bank, short, sel, bias_sd=0.1)
    with pytest.raises(ValueError, match="bias_sd must be >= 0"):
        combined_scores(bank, ResponseTable.from_frame(frame), sel, bias_sd=-1.0)
    with pytest.raises(ValueError, match="repeats"):
        fit_bias_sd([], 5, repeats=0)


@pytest.mark.parametrize("departure", [0.0, 2.0])
def test_the_bias_spread_follows_how_far_new_models_depart(world, departure):
    """New models whose logit moves by +-``departure`` on a fixed half of the items (their
    own direction each): the item model cannot see it, so the chosen spread must grow, and
    the estimate must beat the item model alone when the departure is real and the plain
    difference estimate when it is not."""
    truth, bank, _ = world
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    rng = np.random.default_rng(11)

    def models(n, seed):
        theta = rng.standard_normal(n)
        shift = np.zeros((n, N_ITEMS))
        shift[:, : N_ITEMS // 2] = departure * rng.choice([-1.0, 1.0], n)[:, None]
        return _frame(theta, b, a, shift, seed)

    calibration = [(bank, models(80, 20 + f)) for f in range(2)]
    fitted = fit_bias_sd(calibration, 10, repeats=2)
    assert fitted.cv.loc[fitted.bias_sd] == fitted.cv.min()
    n = len(fitted.z)  # split-conformal: the ceil((n + 1) 0.9)-th smallest |z|
    rank = int(np.ceil((n + 1) * 0.9))
    assert fitted.scale == pytest.approx(np.sort(np.abs(fitted.z))[rank - 1] / norm.ppf(0.95))
    new = models(150, 40)
    truth_score = new.groupby("subject").response.mean()
    errors = {}
    for name, tau in (("shrunk", fitted.bias_sd), ("model", 0.0), ("difference", np.inf)):
        err = []
        for rep in range(6):
            sel = select_items(bank, 10, "random", seed=rep)
            est = combined_scores(bank, ResponseTable.from_frame(new), sel, bias_sd=tau)
            err.append(np.abs(est.score - truth_score.reindex(est.index)).mean())
        errors[name] = np.mean(err)
    if departure == 0.0:
        assert fitted.bias_sd < 0.03
        assert errors["shrunk"] < errors["difference"]
    else:
        assert fitted.bias_sd > 0.03
        assert errors["shrunk"] < errors["model"]


def test_grouped_calibration_folds_keep_each_group_together(world):
    from platinum_jax.efficient import cross_fitted_banks

    table = ResponseTable.from_frame(_part(world[2], slice(0, 60)))
    family = pd.Series([f"f{j % 4}" for j in range(60)], index=table.subjects)
    banks = cross_fitted_banks(TwoPL(), table, folds=2, dispersion=1.0, groups=family)
    held = [set(test.subject) for _, test in banks]
    assert held[0].isdisjoint(held[1]) and len(held[0] | held[1]) == 60
    for members in held:  # every family wholly in one fold
        fams = family[sorted(members)]
        assert all((family[family == f].index.isin(sorted(members))).all() for f in set(fams))
    with pytest.raises(ValueError, match="groups lacks 1 subject"):
        cross_fitted_banks(TwoPL(), table, folds=2, groups=family.iloc[1:])
    with pytest.raises(ValueError, match="fewer than folds=6"):
        cross_fitted_banks(TwoPL(), table, folds=6, groups=family)


def test_the_interval_form_is_chosen_by_coverage_on_left_out_folds():
    """Synthetic calibration errors: when each subject's sd is right the studentised form
    covers subjects of small and large sd alike and wins; when the sd says nothing (errors of
    one spread, sds drawn at random over two orders of magnitude) the studentised width
    under-covers the subjects of small sd and the single absolute width wins."""
    from platinum_jax.efficient._calibrate import _choose_form, _conformal_quantile

    rng = np.random.default_rng(3)
    n, folds = 600, np.repeat(np.arange(4), 150)
    sd = np.exp(rng.uniform(np.log(0.005), np.log(0.5), n))
    honest = sd * rng.standard_normal(n)  # the sd is each error's own spread
    form, cover, pooled = _choose_form(np.abs(honest / sd), np.abs(honest), sd, folds, 0.9)
    assert form == "studentised" and cover.shape == (4, 2)
    assert pooled == pytest.approx(cover["studentised"].mean(), abs=1e-12)  # equal folds
    assert (cover["studentised"] - 0.9).abs().max() < 0.07
    blind = 0.03 * rng.standard_normal(n)  # one spread, whatever the sd says
    assert _choose_form(np.abs(blind / sd), np.abs(blind), sd, folds, 0.9)[0] == "absolute"
    x = np.arange(1.0, 11.0)  # 10 values: the ceil(11 * 0.9) = 10th smallest, then the largest
    assert _conformal_quantile(x, 0.9) == 10.0 and _conformal_quantile(x, 0.5) == 6.0


def test_a_fixed_sd_gives_every_subject_one_width(world):
    truth, bank, _ = world
    frame = _frame(np.array([-1.0, 0.0, 1.5]), truth.items[:, 0], np.exp(truth.items[:, 1]),
                   np.zeros((3, N_ITEMS)), seed=9)
    sel = select_items(bank, 8, "random", seed=2)
    out = combined_scores(bank, ResponseTable.from_frame(frame), sel, bias_sd=0.05,
                          fixed_sd=0.02, interval=0.8)
    half = norm.ppf(0.9) * 0.02  # ppf(0.5 + 0.8 / 2)
    inside = (out.score_lo > 0) & (out.score_hi < 1)
    assert np.allclose((out.score_hi - out.score)[inside], half)
    assert np.allclose(out.score_se, 0.02)
    with pytest.raises(ValueError, match="fixed_sd must be a positive number"):
        combined_scores(bank, ResponseTable.from_frame(frame), sel, bias_sd=0.05, fixed_sd=0.0)


def test_score_combined_command_against_a_synthetic_truth(world, tmp_path):
    """Fit on 60 subjects of the 2PL world, score 40 others from a 10-item random subset
    with ``score`` (the combined estimate is the default): the estimate must beat the subset's plain mean against the new
    subjects' realised mean over all 25 items, its 90% intervals must hold most of them, and
    the command must write what the library gives for the calibration it recorded."""
    import json

    from platinum_jax.cli import main
    from platinum_jax.efficient._io import load_fit
    old, new = _part(world[2], slice(60, 120)), _part(world[2], slice(120, 160))
    data, fit_dir = tmp_path / "old.csv", tmp_path / "fit"
    old.to_csv(data, index=False)
    assert main(["fit", str(data), "--model", "2pl", "--out", str(fit_dir)]) == 0
    assert main(["subset", str(fit_dir), "--k", "10", "--method", "random", "--no-screen",
                 "--out", str(tmp_path / "sub")]) == 0
    subset = pd.read_csv(tmp_path / "sub" / "subset.csv", index_col=0)
    seen = new[new.item.isin(subset.index)]
    path = tmp_path / "new.csv"
    seen.to_csv(path, index=False)
    base = ["score", str(fit_dir), str(path), "--subset", str(tmp_path / "sub" / "subset.csv")]
    out = tmp_path / "scores"
    assert main(base + ["--out", str(out)]) == 2  # the default calibrates: needs --data
    assert main(base + ["--folds", "3", "--estimator", "assisted", "--data", str(data),
                        "--out", str(out)]) == 2  # calibration options on another estimator
    assert main(base + ["--folds", "2", "--data", str(data), "--out", str(out)]) == 2  # no groups
    assert not out.exists()
    assert main(base + ["--folds", "2", "--repeats", "2", "--dispersion", "1", "--groups",
                        "random", "--data", str(data), "--out", str(out)]) == 0
    scores = pd.read_csv(out / "scores.csv", index_col=0)
    truth = new.groupby("subject").response.mean().reindex(scores.index)
    plain = seen.groupby("subject").response.mean().reindex(scores.index)
    assert np.mean(np.abs(scores.score - truth)) < np.mean(np.abs(plain - truth))
    inside = (scores.score_lo <= truth) & (truth <= scores.score_hi)
    assert inside.mean() >= 0.75
    cal = json.loads((out / "calibration.json").read_text())
    assert (cal["method"], cal["k"], cal["folds"]) == ("random", 10, 2)
    assert cal["form"] in ("studentised", "absolute")
    assert cal["grouping"] == "at random (--groups random)"
    # the written scores are the library's for the recorded calibration
    bank = item_bank(load_fit(fit_dir, str(data)), dispersion=1.0)
    assert cal["calibration_models"] == 60  # every old subject answered every item
    lib = combined_scores(bank, ResponseTable.from_frame(seen), subset,
                          bias_sd=cal["bias_sd"], scale=cal["scale"], fixed_sd=cal["fixed_sd"])
    assert scores.score.to_numpy() == pytest.approx(lib.score.to_numpy(), abs=1e-9)
    assert scores.score_hi.to_numpy() == pytest.approx(lib.score_hi.to_numpy(), abs=1e-9)


def test_a_subject_that_answered_every_item_has_its_exact_score(world):
    """Nothing is unseen: the full-benchmark score is the mean response, known exactly, so the
    interval is that point, whichever bias spread, scale or fixed width is passed; and a
    calibration for k = every item has nothing to calibrate, which is refused by name."""
    truth, bank, _ = world
    b, a = truth.items[:, 0], np.exp(truth.items[:, 1])
    frame = _frame(np.array([-0.5, 1.0]), b, a, np.zeros((2, N_ITEMS)), seed=5)
    partial = frame[~((frame.subject == "n001") & frame.item.isin([f"i{j:02d}" for j in
                                                                    range(30)]))]
    responses = ResponseTable.from_frame(partial)
    mean = frame[frame.subject == "n000"].response.mean()
    for options in (dict(bias_sd=0.05), dict(bias_sd=np.inf, scale=3.0),
                    dict(bias_sd=0.05, fixed_sd=0.02)):
        got = combined_scores(bank, responses, None, interval=0.9, **options)
        full, some = got.loc["n000"], got.loc["n001"]
        assert (full.n_observed, some.n_observed) == (N_ITEMS, 10)
        assert full.score == pytest.approx(mean, abs=1e-12)
        assert (full.score_se, full.score_lo, full.score_hi) == (0.0, full.score, full.score)
        assert some.score_hi - some.score_lo > 0
    with pytest.raises(ValueError, match=f"k = {N_ITEMS} asks all {N_ITEMS} items"):
        fit_bias_sd([(bank, frame)], N_ITEMS)


@pytest.fixture(scope="module")
def fitted_2pl(world, tmp_path_factory):
    """`platinum-jax fit` of 60 subjects x 25 items of the world, and the data file."""
    from platinum_jax.cli import main

    root = tmp_path_factory.mktemp("combined")
    data, fit_dir = root / "old.csv", root / "fit"
    _part(world[2], slice(60, 120)).to_csv(data, index=False)
    assert main(["fit", str(data), "--model", "2pl", "--out", str(fit_dir)]) == 0
    return data, fit_dir


def test_score_combined_when_the_new_subjects_answered_every_item(world, fitted_2pl, tmp_path,
                                                                  capsys):
    import json

    from platinum_jax.cli import main

    data, fit_dir = fitted_2pl
    new = _part(world[2], slice(120, 140))
    path = tmp_path / "new.csv"
    new.to_csv(path, index=False)
    base = ["score", str(fit_dir), str(path), "--folds", "2", "--repeats", "1",
            "--dispersion", "1", "--groups", "random", "--data", str(data)]
    assert main(base + ["--out", str(tmp_path / "all")]) == 0
    assert "each score is its mean response, exactly" in capsys.readouterr().out
    scores = pd.read_csv(tmp_path / "all" / "scores.csv", index_col=0)
    truth = new.groupby("subject").response.mean().reindex(scores.index)
    np.testing.assert_allclose(scores.score, truth, atol=1e-12)
    assert (scores.score_lo == scores.score).all() and (scores.score_hi == scores.score).all()
    assert (scores.score_se == 0).all()
    cal = json.loads((tmp_path / "all" / "calibration.json").read_text())
    assert (cal["calibration_models"], cal["k"]) == (0, 25)

    # half of them took a 10-item test: the calibration replays theirs, the others stay exact
    short = set(new.subject.unique()[::2])
    rng = np.random.default_rng(0)
    asked = {s: set(rng.choice(sorted(new.item.unique()), 10, replace=False)) for s in short}
    mixed = new[[s not in short or i in asked[s] for s, i in zip(new.subject, new.item,
                                                                 strict=True)]]
    mixed.to_csv(path, index=False)
    assert main(base + ["--out", str(tmp_path / "mixed")]) == 0
    scores = pd.read_csv(tmp_path / "mixed" / "scores.csv", index_col=0)
    cal = json.loads((tmp_path / "mixed" / "calibration.json").read_text())
    assert (cal["method"], cal["k"], cal["calibration_models"]) == ("cat", 10, 60)
    full = ~scores.index.isin(sorted(short))
    np.testing.assert_allclose(scores.score[full], truth[full], atol=1e-12)
    assert (scores.score_hi[full] == scores.score_lo[full]).all()
    assert (scores.score_hi[~full] > scores.score_lo[~full]).all()


def test_score_calibrates_on_folds_grouped_by_a_column_of_the_data(world, fitted_2pl, tmp_path,
                                                                   capsys):
    """Without --groups, the default calibration holds the fit's models out by the family
    column of --data (else by blocks of its release dates): calibration.json names the
    grouping and its coverage, and both equal the library's calibration with those groups.
    A subject given two families, or a date that cannot be read, is refused by name."""
    import json

    from platinum_jax.cli import main
    from platinum_jax.efficient import cross_fitted_banks, fit_bias_sd
    from platinum_jax.efficient._io import load_fit

    data, fit_dir = fitted_2pl
    old = pd.read_csv(data)
    names = sorted(old.subject.unique())
    family = pd.Series([f"f{j % 4}" for j in range(len(names))], index=names)
    released = pd.Series(pd.date_range("2024-01-01", periods=len(names)).to_numpy()[::-1],
                         index=names)  # the first names released last
    new = _part(world[2], slice(120, 132))
    asked = sorted(new.item.unique())[::5]  # 5 items each: an adaptive test's length 5
    path = tmp_path / "new.csv"
    new[new.item.isin(asked)].to_csv(path, index=False)
    model = load_fit(fit_dir).model
    table = ResponseTable.from_frame(old)

    def run(column, values, out):
        tagged = tmp_path / f"{out}.csv"
        old.assign(**{column: old.subject.map(values)}).to_csv(tagged, index=False)
        code = main(["score", str(fit_dir), str(path), "--data", str(tagged), "--folds", "2",
                     "--repeats", "1", "--dispersion", "1", "--out", str(tmp_path / out)])
        return code, capsys.readouterr()

    blocks = pd.Series(np.where(np.argsort(np.argsort(released.to_numpy())) < 30, "0", "1"),
                       index=names)  # the 30 earliest and the 30 latest
    for column, values, groups, how in (
            ("family", family, family, "by family (column of --data)"),
            ("release_date", released.dt.strftime("%Y-%m-%d"), blocks,
             "by release_date (column of --data: 2 blocks of release dates)")):
        code, printed = run(column, values, column)
        assert code == 0, printed.err
        cal = json.loads((tmp_path / column / "calibration.json").read_text())
        assert (cal["grouping"], cal["method"], cal["k"]) == (how, "cat", 5)
        assert how in printed.out and "of the left-out folds' models" in printed.out
        banks = cross_fitted_banks(model, table, folds=2, dispersion=1.0, groups=groups)
        lib = fit_bias_sd(banks, 5, method="cat", repeats=1)
        assert (cal["bias_sd"], cal["form"]) == (lib.bias_sd, lib.form)
        assert cal["calibration_coverage"] == pytest.approx(lib.coverage, abs=1e-12)
        assert 0 < cal["calibration_coverage"] <= 1
    two = old.subject.map(family).where(old.index != old.index[-1], "other")  # last row
    tagged = tmp_path / "clash.csv"
    old.assign(family=two.to_numpy()).to_csv(tagged, index=False)
    assert main(["score", str(fit_dir), str(path), "--data", str(tagged),
                 "--out", str(tmp_path / "clash")]) == 2
    assert f"subject {old.subject.iloc[-1]!r} has more than one family" in capsys.readouterr().err
    old.assign(date=["not a date"] + ["2024-01-01"] * (len(old) - 1)).to_csv(tagged, index=False)
    assert main(["score", str(fit_dir), str(path), "--data", str(tagged),
                 "--out", str(tmp_path / "clash")]) == 2
    assert "column date: row 2 has no readable date" in capsys.readouterr().err
    assert not (tmp_path / "clash").exists()
