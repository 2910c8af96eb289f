"""Results out, in the formats the field shares: Every Eval Ever 0.3.0 records.

Every Eval Ever (EEE) is a shared schema for evaluation results: one aggregate JSON record
per run and model, with optional instance-level JSONL lines. These functions turn this
package's results into records, and :func:`write_every_eval_ever` writes them as a datastore
tree that the schema's own validator (``every_eval_ever validate``) accepts:

| results | builder |
|---|---|
| accuracy per model and benchmark (``compare``), with instance lines from a response table | :func:`eee_from_accuracy` |
| abilities / capabilities of a fit (``fit``'s ``subjects.csv``) | :func:`eee_from_fit` |
| the Epoch Capabilities Index (``analyze eci``'s ``eci.csv``) | :func:`eee_from_eci` |

Every required field comes from the results or from :class:`EveryEvalEverSource` (the
organisation providing the data, who ran the evaluation, the harness, the model table);
nothing is guessed. What we write, :func:`platinum_jax.importers.read_every_eval_ever` reads
back. From the command line: ``platinum-jax export eee``.

Example::

    from platinum_jax import compare, export
    acc = compare.accuracy("responses.csv")
    source = export.EveryEvalEverSource(
        collection="livecodebench", source_organization="LiveCodeBench",
        evaluator_relationship="third_party", eval_library="lcb_runner")
    logs, dropped = export.eee_from_accuracy(acc, source)
    export.write_every_eval_ever(logs, "eee_out")
"""

from platinum_jax.export._eee_build import eee_from_accuracy, eee_from_eci, eee_from_fit
from platinum_jax.export._eee_records import EveryEvalEverSource, ExportError
from platinum_jax.export._eee_write import write_every_eval_ever

__all__ = [
    "EveryEvalEverSource",
    "ExportError",
    "eee_from_accuracy",
    "eee_from_eci",
    "eee_from_fit",
    "write_every_eval_ever",
]
