"""The suite's units of work for its two xdist workers (tests/conftest.py): a file's tests stay
together, each notebook is a unit, the engine contract is split by model, and the long units
go out first (the notebooks and the contract's models, then files with a test marked slow,
then the others, most tests first)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def _suite_conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest",
                                                  Path(__file__).with_name("conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_units_of_work():
    c = _suite_conftest()
    assert c.work_unit("tests/agency/test_agency.py::test_kappa_identity") == \
        "tests/agency/test_agency.py"
    assert c.work_unit("tests/agency/test_agency.py::test_names[kwargs0-Sigma]") == \
        "tests/agency/test_agency.py"
    contract = "tests/inference/test_engine_contract.py"
    assert c.work_unit(f"{contract}::test_map_recovers_the_truth[graded]") == \
        c.work_unit(f"{contract}::test_cross_validation_predicts_every_response[graded]") == \
        f"{contract}[graded]"
    assert c.work_unit(f"{contract}::test_every_registered_model_has_a_world") == contract
    notebook = "tests/test_notebooks.py::test_notebook_executes[stitching]"
    assert c.work_unit(notebook) == notebook
    units = {"tests/agency/test_agency.py": (30, False), "tests/cli/test_cli_fit.py": (40, False),
             notebook: (1, False), f"{contract}[graded]": (4, False),
             "tests/inference/test_sharding.py": (3, True)}
    order = sorted(units, key=lambda u: c.first_out(u, *units[u]))
    assert order == [f"{contract}[graded]", notebook, "tests/inference/test_sharding.py",
                     "tests/cli/test_cli_fit.py", "tests/agency/test_agency.py"]
