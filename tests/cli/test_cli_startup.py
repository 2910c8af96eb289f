"""Start-up cost: importing the package and asking for help load no JAX; the lazy command table
agrees with what each command module registers."""

from __future__ import annotations

import subprocess
import sys

from platinum_jax import cli


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True,
    )
    return set(out.stdout.split())


def test_import_and_help_do_not_load_jax():
    assert "jax" not in _modules_after("import platinum_jax")
    help_run = (
        "from platinum_jax.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    loaded = _modules_after(help_run)
    assert not {"jax", "numpyro", "pandas", "matplotlib"} & loaded


def test_lazy_names_resolve_to_the_real_objects():
    import platinum_jax
    from platinum_jax.agency import optimal_weights

    assert platinum_jax.agency.optimal_weights is optimal_weights
    assert set(platinum_jax.__all__) <= set(dir(platinum_jax))
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        platinum_jax.nonexistent  # noqa: B018


def test_command_table_matches_the_registered_commands():
    full = cli.build_parser()
    lazy = cli.build_parser([])
    (full_sub,) = [a for a in full._actions if a.dest == "command"]
    (lazy_sub,) = [a for a in lazy._actions if a.dest == "command"]
    assert list(full_sub.choices) == list(lazy_sub.choices)
    full_help = {a.dest: a.help for a in full_sub._choices_actions}
    lazy_help = {a.dest: a.help for a in lazy_sub._choices_actions}
    assert full_help == lazy_help
    # a command is parsed by its real parser when named
    args = cli.build_parser(["stitch"]).parse_args(["stitch", "x.csv", "--out", "o"])
    assert args.data == "x.csv" and args.min_benchmarks == 4 and args.plots is False


def test_ctrl_c_while_the_commands_load_is_one_line_not_a_traceback(monkeypatch, capsys):
    import platinum_jax.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["fit", "data.csv", "--out", "x"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == ("platinum-jax fit: interrupted before the command started; nothing "
                           "was read or written")
