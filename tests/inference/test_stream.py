"""The streamed 2PL path: Parquet read in batches into one byte per cell, the blocked EM, and
scoring against frozen items.

Held against the package's other paths (the pandas reader, the marginal EM) and against
posteriors computed here with NumPy on a grid. The streamed EM on two devices is held against
one device in tests/inference/test_sharding.py, in the one subprocess that starts two."""

from __future__ import annotations

import json

import jax
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.special import expit

from platinum_jax.data import CodedResponses, ResponseTable, read_parquet_streamed
from platinum_jax.inference import fit, fit_streamed_2pl, score_streamed_2pl
from platinum_jax.models import TwoPL

jax.config.update("jax_enable_x64", True)


# One shape for the command-line tests: the streamed fit's compiled passes depend on the
# matrix's shape, not on its cells, so the default fit is compiled once for all of them.
CLI_SHAPE = (80, 10)


def _world(n_s, n_i, seed, missing=0.3):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_s)
    b = rng.normal(size=n_i)
    a = np.exp(rng.normal(0.0, 0.3, n_i))
    s, i = np.divmod(np.arange(n_s * n_i), n_i)
    keep = rng.random(s.size) >= missing
    s, i = s[keep], i[keep]
    y = (rng.random(s.size) < expit(a[i] * (theta[s] - b[i]))).astype(np.int8)
    return s, i, y


def _parquet(path, s, i, y, *, row_group=50):
    frame = pd.DataFrame({"subject": [f"model-{k}" for k in s],
                          "item": [f"q{k:03d}" for k in i], "response": y})
    frame = frame.sample(frac=1.0, random_state=0)  # rows in no particular order
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=row_group)
    return frame


def test_streamed_reader_equals_pandas_path(tmp_path):
    s, i, y = _world(37, 11, 0)
    path = tmp_path / "r.parquet"
    _parquet(path, s, i, y)
    streamed = read_parquet_streamed(path, batch_rows=23)  # many batches, new labels in each
    table = ResponseTable.read(path)
    assert list(streamed.subjects) == list(table.subjects)
    assert list(streamed.items) == list(table.items)
    assert streamed.n_responses == table.n_responses == s.size
    dense = np.zeros((table.n_subjects, table.n_items), np.int8)
    dense[table.subject_index, table.item_index] = table.response.astype(np.int8) + 1
    np.testing.assert_array_equal(streamed.codes[:table.n_subjects], dense)
    assert not streamed.codes[table.n_subjects:].any()  # padding rows hold nothing
    # integer labels with gaps: kept as numbers, in numeric order (the table's are strings)
    ints = tmp_path / "ints.parquet"
    pd.DataFrame({"model": 3 * s + 7, "item": 2 * i, "score": y}).sample(
        frac=1.0, random_state=1).to_parquet(ints, row_group_size=40)
    streamed = read_parquet_streamed(ints, batch_rows=29)
    table = ResponseTable.read(ints)
    assert list(streamed.subjects) == sorted(set(3 * s + 7))
    assert list(streamed.items) == sorted(set(2 * i))
    dense = np.zeros((table.n_subjects, table.n_items), np.int8)
    dense[table.subject_index, table.item_index] = table.response.astype(np.int8) + 1
    got = pd.DataFrame(streamed.codes[:streamed.n_subjects],
                       index=streamed.subjects.astype(str), columns=streamed.items.astype(str))
    np.testing.assert_array_equal(got.loc[table.subjects, table.items].to_numpy(), dense)


def test_streamed_reader_names_bad_rows(tmp_path):
    s, i, y = _world(10, 5, 1, missing=0.0)
    bad = tmp_path / "bad.parquet"
    frame = pd.DataFrame({"subject": s, "item": i, "response": y.astype(float)})
    frame.loc[7, "response"] = 0.5
    frame.to_parquet(bad)
    with pytest.raises(ValueError, match=r"bad.parquet.*row 7 has 0.5"):
        read_parquet_streamed(bad, batch_rows=4)
    dup = tmp_path / "dup.parquet"
    pd.concat([frame.iloc[:3], frame.iloc[:3]]).assign(response=1).to_parquet(dup)
    with pytest.raises(ValueError, match=r"3 rows repeat a \(subject, item\) pair"):
        read_parquet_streamed(dup)
    empty = tmp_path / "null.parquet"
    frame.assign(response=1.0).astype({"item": "object"}).assign(
        item=lambda f: f["item"].where(f.index != 2, None)).to_parquet(empty)
    with pytest.raises(ValueError, match=r"column 'item' is empty at row 2"):
        read_parquet_streamed(empty)


def test_streamed_em_equals_marginal_em():
    s, i, y = _world(300, 12, 2)
    ref = fit(TwoPL(), ResponseTable.from_arrays(s, i, y.astype(float)), method="marginal",
              tol=1e-8)
    # float64 products (tol < 1e-6) and blocks of 256 subjects: two blocks, one padded
    res = fit_streamed_2pl(CodedResponses.from_arrays(s, i, y), tol=1e-8, block_cells=256 * 12)
    assert res.converged and res.diagnostics["block_rows"] == 256
    for col in ("difficulty", "discrimination"):
        np.testing.assert_allclose(res.items[col].to_numpy(), ref.items[col].to_numpy(),
                                   atol=1e-6)
    for col in ("ability", "ability_sd"):
        np.testing.assert_allclose(res.subjects[col].to_numpy(), ref.subjects[col].to_numpy(),
                                   atol=1e-6)
    assert res.diagnostics["marginal_log_lik"] == pytest.approx(
        ref.diagnostics["marginal_log_lik"], abs=1e-5)


def test_scoring_against_frozen_items_matches_a_numpy_posterior():
    rng = np.random.default_rng(3)
    n_i = 8
    items = pd.DataFrame({"difficulty": rng.normal(size=n_i),
                          "discrimination": np.exp(rng.normal(0, 0.3, n_i))},
                         index=pd.Index([f"i{k}" for k in range(n_i)], name="item"))
    s, i, y = _world(40, n_i, 4)
    scores = score_streamed_2pl(CodedResponses.from_arrays(s, i, y), items, eap_nodes=401)
    grid = np.linspace(-6, 6, 2001)  # a finer grid: the reference integral
    a, b = items["discrimination"].to_numpy(), items["difficulty"].to_numpy()
    for subject in (0, 17, 39):
        rows = s == subject
        p = expit(a[i[rows]][:, None] * (grid[None, :] - b[i[rows]][:, None]))
        like = np.prod(np.where(y[rows][:, None] == 1, p, 1 - p), axis=0)
        post = like * np.exp(-0.5 * grid**2)
        post /= post.sum()
        mean = post @ grid
        sd = np.sqrt(post @ grid**2 - mean**2)
        cdf = np.cumsum(post)
        lo, hi = np.interp([0.025, 0.975], cdf, grid)
        got = scores.loc[f"s{subject}"]
        assert got["ability"] == pytest.approx(mean, abs=1e-4)
        assert got["ability_sd"] == pytest.approx(sd, abs=1e-4)
        assert got["lower"] == pytest.approx(lo, abs=0.02)
        assert got["upper"] == pytest.approx(hi, abs=0.02)
    with pytest.raises(ValueError, match="not in items"):
        score_streamed_2pl(CodedResponses.from_arrays(s, i, y), items.iloc[:-1])


def test_cli_stream_writes_the_python_fit(tmp_path, capsys):
    from platinum_jax.cli import main

    s, i, y = _world(*CLI_SHAPE, 5)
    path = tmp_path / "r.parquet"
    _parquet(path, s, i, y)
    out = tmp_path / "irt"
    assert main(["fit", str(path), "--model", "2pl", "--method", "marginal", "--stream",
                 "--out", str(out)]) == 0
    py = fit_streamed_2pl(path)
    items = pd.read_csv(out / "items.csv", index_col="item")
    np.testing.assert_allclose(items.to_numpy(), py.items.to_numpy(), rtol=1e-12)
    subjects = pd.read_csv(out / "subjects.csv", index_col="subject")
    assert list(subjects.index) == list(py.subjects.index)
    capsys.readouterr()
    assert main(["fit", str(path), "--model", "3pl", "--method", "marginal", "--stream",
                 "--out", str(tmp_path / "x")]) == 2
    assert "--stream fits --model 2pl --method marginal" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_expanded_step_maximises_its_objective():
    """``_expand``'s location and scale against SciPy's maximiser of the objective it states."""
    from scipy.optimize import minimize

    from platinum_jax.inference._stream_em import _expand

    rng = np.random.default_rng(7)
    b, la = rng.normal(0.3, 1.0, 25), rng.normal(0.2, 0.3, 25)
    count, s1, s2 = 40.0, 40 * 0.15, 40 * 1.3  # abilities' mean 0.15, mean square 1.3
    nb, nla = _expand(jax.numpy.asarray(b), jax.numpy.asarray(la),
                      jax.numpy.asarray([count, s1, s2]))

    def minus(v):
        mu, ls = v
        sq = s2 - 2 * mu * s1 + count * mu**2 + np.sum((b - mu) ** 2) / 9.0
        return count * ls + sq * np.exp(-2 * ls) / 2 + np.sum((la + ls) ** 2) / 2

    mu, ls = minimize(minus, [0.0, 0.0], method="Nelder-Mead",
                      options={"xatol": 1e-11, "fatol": 1e-13, "maxiter": 4000}).x
    np.testing.assert_allclose(np.asarray(nla), la + ls, atol=1e-7)
    np.testing.assert_allclose(np.asarray(nb), (b - mu) / np.exp(ls), atol=1e-7)


def test_scale_step_is_newton_on_the_quadrature_likelihood():
    """The scale step (with no EM move to discount) against Newton's step on the objective
    along ``b -> (b - mu) e^-ls``, ``log a -> log a + ls``, its derivatives by finite
    differences of the pass's log-likelihood (float64 products)."""
    import jax.numpy as jnp

    from platinum_jax.inference._marginal import quadrature
    from platinum_jax.inference._stream_em import _scale_step
    from platinum_jax.inference._stream_passes import _blocks, _e_pass

    s, i, y = _world(150, 40, 9)
    codes = CodedResponses.from_arrays(s, i, y)
    blocks, _ = _blocks(codes.codes, 1 << 22)
    x, w = quadrature(31)
    x, log_w = jnp.asarray(x), jnp.asarray(np.log(w))
    rng = np.random.default_rng(10)
    b0, la0 = rng.normal(0.2, 1.0, 40), rng.normal(-0.1, 0.2, 40)

    def objective(mu, ls):
        b, la = (b0 - mu) * np.exp(-ls), la0 + ls
        ll = float(_e_pass(blocks, jnp.exp(jnp.asarray(la)), jnp.asarray(b), x, log_w,
                           jnp.float64)[2])
        return -ll + np.sum(b**2) / 18 + np.sum(la**2) / 2

    h = 1e-4
    f = {(u, v): objective(u * h, v * h) for u in (-1, 0, 1) for v in (-1, 0, 1)}
    grad = np.array([f[1, 0] - f[-1, 0], f[0, 1] - f[0, -1]]) / (2 * h)
    hess = np.array([[f[1, 0] - 2 * f[0, 0] + f[-1, 0],
                      (f[1, 1] - f[1, -1] - f[-1, 1] + f[-1, -1]) / 4],
                     [(f[1, 1] - f[1, -1] - f[-1, 1] + f[-1, -1]) / 4,
                      f[0, 1] - 2 * f[0, 0] + f[0, -1]]]) / h**2
    want = -np.linalg.solve(hess, grad)
    b, la = jnp.asarray(b0), jnp.asarray(la0)
    r1, n, _, _, cov = _e_pass(blocks, jnp.exp(la), b, x, log_w, jnp.float64, scale=True)
    r0 = jnp.asarray(np.bincount(i, weights=y, minlength=40), jnp.float64)
    step, ok, convex = _scale_step(b, la, b, la, r0, r1, n, cov, x)
    assert bool(ok) and bool(convex)
    np.testing.assert_allclose(np.asarray(step), want, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("nodes", [81, 21])
def test_scale_em_reaches_plain_em_fixed_point_in_fewer_passes(nodes):
    # many items a subject: plain EM creeps along the common scale of the discriminations.
    # On 21 nodes (0.6 apart, against posteriors about 0.15 wide) the expanded step is no
    # ascent step of the quadrature's likelihood; the scale step is, on any grid
    s, i, y = _world(250, 120, 8, missing=0.0)
    codes = CodedResponses.from_arrays(s, i, y)
    plain = fit_streamed_2pl(codes, tol=1e-10, max_iter=3000, nodes=nodes, em="squarem")
    assert plain.converged
    for tol in (1e-4, 1e-8):
        scale = fit_streamed_2pl(codes, tol=tol, max_iter=500, nodes=nodes)
        assert scale.converged and scale.diagnostics["em"] == "scale"
        np.testing.assert_allclose(scale.items.to_numpy(), plain.items.to_numpy(),
                                   atol=tol)
        # Under half of SQUAREM's passes at the loose tolerance; fewer at the tight one, where
        # the two are close (18 against 34-37: SQUAREM's count moves by a few passes with the
        # last bits of rounding, e.g. between XLA's CPU code generators).
        bar = 0.5 if tol > 1e-6 else 1.0
        assert scale.diagnostics["iterations"] < bar * plain.diagnostics["iterations"]
    assert scale.diagnostics["marginal_log_lik"] == pytest.approx(
        plain.diagnostics["marginal_log_lik"], abs=1e-6)
    with pytest.raises(ValueError, match="em must be one of"):
        fit_streamed_2pl(codes, em="px")


def test_streamed_import_gives_the_pandas_import_table_and_fit(tmp_path, capsys):
    from platinum_jax.cli import main

    s, i, y = _world(*CLI_SHAPE, 11)
    src = tmp_path / "r.parquet"
    _parquet(src, s, i, y, row_group=37)
    # the streamed import and the pandas one, then the streamed fit of each
    assert main(["import", "tidy", str(src), "--out", str(tmp_path / "p.parquet")]) == 0
    assert main(["import", "tidy", str(src), "--stream", "--out",
                 str(tmp_path / "s.parquet")]) == 0
    pandas_table = ResponseTable.read(tmp_path / "p.parquet")
    streamed_table = ResponseTable.read(tmp_path / "s.parquet")
    assert list(streamed_table.subjects) == list(pandas_table.subjects)
    assert list(streamed_table.items) == list(pandas_table.items)
    got = streamed_table.to_frame().set_index(["subject", "item"])["response"]
    want = pandas_table.to_frame().set_index(["subject", "item"])["response"]
    pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_dtype=False)
    # and both against the rows written at the start
    truth = pd.Series(y.astype(float), index=pd.MultiIndex.from_arrays(
        [[f"model-{k}" for k in s], [f"q{k:03d}" for k in i]], names=["subject", "item"]))
    pd.testing.assert_series_equal(got.sort_index(), truth.sort_index(), check_dtype=False,
                                   check_names=False)
    for name in ("p", "s"):
        assert main(["fit", str(tmp_path / f"{name}.parquet"), "--model", "2pl", "--method",
                     "marginal", "--stream", "--out", str(tmp_path / f"fit_{name}")]) == 0
    fits = [pd.read_csv(tmp_path / f"fit_{name}" / "items.csv", index_col="item")
            for name in ("p", "s")]
    pd.testing.assert_frame_equal(fits[1], fits[0], rtol=1e-12)
    # what --stream refuses, with the fix named; nothing written
    capsys.readouterr()
    assert main(["import", "tidy", str(src), "--stream", "--duplicates", "mean", "--out",
                 str(tmp_path / "x.parquet")]) == 2
    assert "reduce repeated pairs without --stream" in capsys.readouterr().err
    assert main(["import", "tidy", str(src), "--stream", "--out", str(tmp_path / "x.csv")]) == 2
    assert "--stream writes a .parquet file" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists() and not (tmp_path / "x.csv").exists()


def test_cli_stream_em_variants_run_and_agree(tmp_path, capsys):
    """``fit --stream --em scale|squarem``: both reach plain EM's fixed point (a fit run
    here far past the default tolerance), each to within the command's tolerance, and
    ``--em`` without ``--stream`` is refused before anything is written."""
    from platinum_jax.cli import main

    s, i, y = _world(*CLI_SHAPE, 12)
    path = tmp_path / "r.parquet"
    _parquet(path, s, i, y)
    ref = fit_streamed_2pl(path, tol=1e-10, max_iter=5000, em="squarem")
    assert ref.converged
    got = {}
    for em in ("scale", "squarem"):
        out = tmp_path / em
        assert main(["fit", str(path), "--model", "2pl", "--method", "marginal", "--stream",
                     "--em", em, "--out", str(out)]) == 0
        assert f"em {em})" in capsys.readouterr().out
        summary = json.loads((out / "fit.json").read_text())
        assert summary["diagnostics"]["em"] == em and summary["converged"]
        got[em] = pd.read_csv(out / "items.csv", index_col="item").loc[ref.items.index]
        # the default tolerance 1e-4 bounds one EM step; the distance to the fixed point
        # is that step over (1 - rate), a few times the step at most here
        np.testing.assert_allclose(got[em].to_numpy(), ref.items.to_numpy(), atol=1e-3)
    np.testing.assert_allclose(got["scale"].to_numpy(), got["squarem"].to_numpy(), atol=1e-3)
    assert main(["fit", str(path), "--em", "squarem", "--method", "marginal",
                 "--out", str(tmp_path / "x")]) == 2
    assert "add --stream" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_streamed_fit_directory_is_read_as_any_fit(tmp_path, capsys):
    """`fit --stream` writes what `fit --model 2pl --method marginal` writes (globals.csv, the
    model's config, each file's checksum): `subset`, `score` and `cat` read it, and the
    parameters read back are the ones written."""
    from platinum_jax.cli import main
    from platinum_jax.efficient import load_fit

    s, i, y = _world(*CLI_SHAPE, 3)
    path = tmp_path / "r.parquet"
    frame = _parquet(path, s, i, y)
    out = tmp_path / "irt"
    assert main(["fit", str(path), "--stream", "--model", "2pl", "--method", "marginal",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "fit.json").read_text())
    assert set(summary["files"]) == {"subjects.csv", "items.csv", "globals.csv"}
    back = load_fit(out)
    items = pd.read_csv(out / "items.csv", index_col="item")
    np.testing.assert_allclose(back.items.loc[items.index, "difficulty"], items["difficulty"],
                               rtol=1e-12)
    # each item's count of responses, from the rows of the file
    counts = frame.groupby("item").size()
    assert (items["n_responses"] == counts.loc[items.index]).all()
    csv = tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    assert main(["subset", str(out), "--k", "4", "--method", "random", "--data", str(csv),
                 "--out", str(tmp_path / "sub")]) == 0
    assert main(["score", str(out), str(csv), "--data", str(csv), "--estimator", "item-model",
                 "--out", str(tmp_path / "score")]) == 0
    assert main(["cat", str(csv), "--items", str(out / "items.csv"), "--budget", "4",
                 "--out", str(tmp_path / "cat")]) == 0
    capsys.readouterr()


def test_text_responses_are_refused_by_name(tmp_path, capsys):
    from platinum_jax.cli import main

    s, i, y = _world(*CLI_SHAPE, 4)
    path = tmp_path / "r.parquet"
    frame = _parquet(path, s, i, np.where(y == 1, "right", "wrong"))
    assert len(frame)
    assert main(["fit", str(path), "--stream", "--model", "2pl", "--method", "marginal",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "column 'response' holds" in err and "string" in err and "recode them" in err
    assert "Traceback" not in err
