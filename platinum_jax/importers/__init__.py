"""Read the logs evaluation harnesses write into the measurement engine's response table.

Every reader returns an :class:`ImportedResponses`: the long responses with their provenance
(``file``, ``task``, ``metric``), the logs' own metadata (one row per run) and the per-item
records without a usable score (reported, never dropped in silence). ``.table()`` gives the
:class:`~platinum_jax.data.ResponseTable` that :func:`platinum_jax.inference.fit` reads.

| format | reader | reads |
|---|---|---|
| ``lm-eval`` | :func:`read_lm_eval` | lm-evaluation-harness (v0.3 on) and Evalchemy results |
| ``lighteval`` | :func:`read_lighteval` | lighteval ``details_<task>_<timestamp>.parquet`` |
| ``inspect`` | :func:`read_inspect` (extra ``inspect``) | Inspect ``.eval`` / ``.json`` logs |
| ``helm`` | :func:`read_helm` | HELM ``benchmark_output/runs/<suite>/`` trees |
| ``eee`` | :func:`read_every_eval_ever` | Every Eval Ever records and sidecars |
| ``tidy`` | :func:`read_tidy` | long CSV / Parquet |
| ``epoch`` | :func:`read_epoch` | Epoch AI ``raw/`` export |

Epoch's side tables (benchmark release dates and flags, METR time horizons, the distillation
list, training compute) and the Rosetta Stone paper's long score table have their own readers:
:func:`read_epoch_raw` (and :func:`read_epoch_scores`, the same rows as a score table), :func:`read_benchmark_info`, :func:`read_metr_horizons`,
:func:`read_distilled_models` and :func:`read_model_compute`.

The per-item primitives release of Haupt et al. (noise, cost and welfare per item, the judges'
work-activity rankings) is read by :func:`read_principal_agent_release` into a
:class:`PrincipalAgentRelease` of labelled tables, not a response table.

Example::

    from platinum_jax.importers import read_lm_eval
    logs = read_lm_eval("lm_eval_out/", metric="acc_norm")
    logs.missing          # documents without a score, with the reason
    table = logs.table()  # ResponseTable: subject = model, item = task/doc_id, group = task
"""

from platinum_jax.importers._common import ImportedResponses, LogFormatError
from platinum_jax.importers._epoch import (
    EpochDataWarning,
    read_benchmark_info,
    read_distilled_models,
    read_epoch_raw,
    read_metr_horizons,
    read_model_compute,
)
from platinum_jax.importers._every_eval_ever import read_every_eval_ever
from platinum_jax.importers._helm import read_helm
from platinum_jax.importers._inspect import read_inspect
from platinum_jax.importers._lighteval import read_lighteval
from platinum_jax.importers._lm_eval import read_lm_eval
from platinum_jax.importers._principal_agent import (
    PrincipalAgentRelease,
    ReleaseFileMissingError,
    ReleaseFormatError,
    read_principal_agent_release,
)
from platinum_jax.importers._tables import read_epoch, read_epoch_scores, read_tidy

__all__ = [
    "FORMATS",
    "EpochDataWarning",
    "ImportedResponses",
    "LogFormatError",
    "PrincipalAgentRelease",
    "ReleaseFileMissingError",
    "ReleaseFormatError",
    "read_benchmark_info",
    "read_distilled_models",
    "read_epoch",
    "read_epoch_raw",
    "read_epoch_scores",
    "read_every_eval_ever",
    "read_helm",
    "read_inspect",
    "read_lighteval",
    "read_lm_eval",
    "read_metr_horizons",
    "read_model_compute",
    "read_principal_agent_release",
    "read_tidy",
]

# Format names of `platinum-jax import FORMAT` and the reader of each.
FORMATS = {
    "lm-eval": read_lm_eval,
    "inspect": read_inspect,
    "helm": read_helm,
    "eee": read_every_eval_ever,
    "lighteval": read_lighteval,
    "tidy": read_tidy,
    "epoch": read_epoch,
}
