"""Write the small evaluation logs under tests/data/logs/ with the real evaluation tools, offline.

The readers in platinum_jax.importers are tested on these files. They are produced by the tools
themselves (not written by hand), on tiny inline tasks, with models that need no network:

* lm-evaluation-harness (``lm_eval``): its ``dummy`` model (random log-likelihoods, the text
  "lol" for generations) on two local task YAMLs (``dataset_path: json`` with local
  ``data_files``), for two runs named ``dummy-a`` and ``dummy-b`` (different random seeds), with
  ``--log_samples``; the ``--output_path`` tree goes to ``logs/lm_eval/``.
* Inspect (``inspect_ai``): the ``mockllm/model`` provider with scripted outputs that carry token
  usage (without usage Inspect counts tokens with tiktoken, which downloads an encoding), on a
  small inline arithmetic task with two scorers and two epochs; one ``.eval`` and one ``.json``
  log go to ``logs/inspect/``.
* HELM (``crfm-helm``): ``helm-run`` with the built-in ``simple/model1`` client on the built-in
  ``simple_mcqa`` and ``simple_classification`` scenarios (6 instances each). The client's
  answers are degenerate (exact match 0 throughout) but the files are HELM's own. Each run's
  ``run_spec.json``, ``scenario_state.json`` and ``per_instance_stats.json`` go to
  ``logs/helm/runs/tiny/`` (``stats.json`` and ``scenario.json`` are left out: the reader does
  not use them).
* Every Eval Ever (``every_eval_ever``): one more lm-evaluation-harness run (dummy model named
  ``demo-org/dummy-c``: the converter takes the developer from the ``org/`` prefix) converted
  by ``every_eval_ever convert lm_eval --include_samples`` into aggregate records with their
  instance-level ``_samples.jsonl`` sidecars, under ``logs/every_eval_ever/``.

How to run (from the repository root; the tools live in a separate environment, the package's
readers never import them except Inspect's log API for Inspect logs):

    python3 -m venv ../fixture-venv
    ../fixture-venv/bin/pip install lm-eval inspect-ai
    HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 ../fixture-venv/bin/python tests/data/make_fixtures.py \
        lm_eval inspect

HELM lists torch among its requirements, but ``helm-run`` on the simple scenarios never imports
it; install it without its dependencies, then its light ones, in another environment:

    python3 -m venv ../helm-venv
    ../helm-venv/bin/pip install --no-deps crfm-helm
    ../helm-venv/bin/pip install cattrs~=22.2 colorlog dacite Mako numpy pandas pyhocon ubelt \
        retrying tqdm zstandard sqlitedict bottle pyarrow pyarrow-hotfix scipy nltk rouge-score \
        uncertainty-calibration scikit-learn "datasets~=3.1"
    HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 ../helm-venv/bin/python tests/data/make_fixtures.py helm

Every Eval Ever needs Python >= 3.12; its command line is found through ``EEE_CLI``:

    python3.12 -m venv ../eee-venv && ../eee-venv/bin/pip install every-eval-ever
    EEE_CLI=../eee-venv/bin/every_eval_ever HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 \
        ../fixture-venv/bin/python tests/data/make_fixtures.py every_eval_ever

Machine-specific text the tools record (the temporary working directory, the user's home) is
replaced by ``<tmp>`` / ``<home>`` after writing, so that no local path is committed; nothing
else in the logs is edited.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "logs"

MC_DOCS = [  # multiple choice: lm-eval scores acc and acc_norm per document
    {"question": "2 + 2 =", "choices": ["3", "4", "5"], "answer": 1},
    {"question": "The capital of France is", "choices": ["Paris", "Rome"], "answer": 0},
    {"question": "Water boils at sea level at (degrees Celsius)", "choices": ["90", "100"],
     "answer": 1},
    {"question": "The largest planet is", "choices": ["Mars", "Jupiter", "Venus"], "answer": 1},
    {"question": "3 * 3 =", "choices": ["6", "9", "12", "8"], "answer": 1},
    {"question": "The chemical symbol of gold is", "choices": ["Au", "Ag"], "answer": 0},
]
GEN_DOCS = [  # generation: the dummy model always answers "lol", so exact_match is 1 on doc 1
    {"question": "Say hello.", "answer": "hello"},
    {"question": "Say lol.", "answer": "lol"},
    {"question": "Name a colour.", "answer": "red"},
    {"question": "Name a number.", "answer": "seven"},
]
MC_YAML = """\
task: tiny_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: tiny_mc.jsonl
test_split: test
output_type: multiple_choice
doc_to_text: "{{question}}"
doc_to_choice: "{{choices}}"
doc_to_target: "{{answer}}"
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
"""
GEN_YAML = """\
task: tiny_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: tiny_gen.jsonl
test_split: test
output_type: generate_until
doc_to_text: "{{question}}"
doc_to_target: "{{answer}}"
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""


def _scrub(root: Path, replacements: dict[str, str]) -> None:
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl"):
            text = path.read_text(encoding="utf-8")
            for old, new in replacements.items():
                text = text.replace(old, new)
            path.write_text(text, encoding="utf-8")


def make_lm_eval(work: Path) -> None:
    for name, docs, yaml in (("tiny_mc", MC_DOCS, MC_YAML), ("tiny_gen", GEN_DOCS, GEN_YAML)):
        (work / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
        (work / f"{name}.yaml").write_text(yaml)
    env = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    lm_eval = Path(sys.executable).with_name("lm_eval")
    for name, seed in (("dummy-a", "1"), ("dummy-b", "2")):
        subprocess.run(
            [str(lm_eval), "--model", "dummy", "--model_args", f"pretrained={name}",
             "--tasks", "tiny_mc,tiny_gen", "--include_path", ".", "--output_path", "out",
             "--log_samples", "--seed", seed],
            cwd=work, env=env, check=True,
        )
    dest = OUT / "lm_eval"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(work / "out", dest)
    _scrub(dest, {str(work): "<tmp>", str(Path.home()): "<home>"})


def make_inspect(work: Path) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes, match
    from inspect_ai.solver import generate

    samples = [
        Sample(id="add-1", input="What is 1 + 1? Answer with a number.", target="2"),
        Sample(id="add-2", input="What is 2 + 3? Answer with a number.", target="5"),
        Sample(id="mul-1", input="What is 3 * 4? Answer with a number.", target="12"),
        Sample(id="mul-2", input="What is 6 * 7? Answer with a number.", target="42"),
    ]
    task = Task(dataset=samples, solver=generate(), scorer=[match(), includes()], name="arith")
    # Scripted answers, consumed in order: samples run one at a time (max_samples=1), epoch by
    # epoch. Some answers are wrong, one is right only under `includes`.
    answers = ["2", "5", "13", "The answer is 42", "2", "6", "12", "42"]

    def outputs():
        for text in answers:
            out = ModelOutput.from_content(model="mockllm/model", content=text)
            out.usage = ModelUsage(input_tokens=12, output_tokens=3, total_tokens=15)
            yield out

    dest = OUT / "inspect"
    shutil.rmtree(dest, ignore_errors=True)
    for fmt in ("eval", "json"):
        model = get_model("mockllm/model", custom_outputs=outputs())
        eval(task, model=model, epochs=2, max_samples=1, log_dir=str(work / fmt),
             log_format=fmt, display="none")
        dest.mkdir(parents=True, exist_ok=True)
        for f in (work / fmt).iterdir():
            shutil.copy(f, dest / f.name)
    _scrub(dest, {str(work): "<tmp>", str(Path.home()): "<home>"})


def make_helm(work: Path) -> None:
    helm_run = Path(sys.executable).with_name("helm-run")
    env = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    subprocess.run(
        [str(helm_run), "--run-entries", "simple_mcqa:model=simple/model1",
         "simple_classification:model=simple/model1", "--suite", "tiny",
         "--max-eval-instances", "6"],
        cwd=work, env=env, check=True,
    )
    dest = OUT / "helm" / "runs" / "tiny"
    shutil.rmtree(OUT / "helm", ignore_errors=True)
    for run in sorted((work / "benchmark_output" / "runs" / "tiny").iterdir()):
        if not (run / "run_spec.json").exists():
            continue  # eval_cache
        (dest / run.name).mkdir(parents=True)
        for name in ("run_spec.json", "scenario_state.json", "per_instance_stats.json"):
            shutil.copy(run / name, dest / run.name / name)
    _scrub(OUT / "helm", {str(work): "<tmp>", str(Path.home()): "<home>"})


def make_every_eval_ever(work: Path) -> None:
    for name, docs, yaml in (("tiny_mc", MC_DOCS, MC_YAML), ("tiny_gen", GEN_DOCS, GEN_YAML)):
        (work / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
        (work / f"{name}.yaml").write_text(yaml)
    env = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    lm_eval = Path(sys.executable).with_name("lm_eval")
    subprocess.run(
        [str(lm_eval), "--model", "dummy", "--model_args", "pretrained=demo-org/dummy-c",
         "--tasks", "tiny_mc,tiny_gen", "--include_path", ".", "--output_path", "out",
         "--log_samples", "--seed", "3"],
        cwd=work, env=env, check=True,
    )
    eee = EEE_CLI
    subprocess.run(
        [eee, "convert", "lm_eval", "--log_path", "out/demo-org__dummy-c", "--output_dir", "eee",
         "--include_samples", "--source_organization_name", "platinum-jax-tests",
         "--evaluator_relationship", "third_party"],
        cwd=work, env=env, check=True,
    )
    dest = OUT / "every_eval_ever"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(work / "eee", dest)
    _scrub(dest, {str(work): "<tmp>", str(Path.home()): "<home>"})


if __name__ == "__main__":
    which = sys.argv[1:] or ["lm_eval", "inspect"]
    # resolved before the working directory changes, so a relative EEE_CLI still works
    EEE_CLI = shutil.which(os.environ.get("EEE_CLI", "every_eval_ever")) or "every_eval_ever"
    EEE_CLI = str(Path(EEE_CLI).resolve()) if os.sep in EEE_CLI else EEE_CLI
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        for name in which:
            work = Path(tmp) / name
            work.mkdir()
            makers = {"lm_eval": make_lm_eval, "inspect": make_inspect, "helm": make_helm,
                      "every_eval_ever": make_every_eval_ever}
            makers[name](work)
    print(f"wrote {OUT}")
