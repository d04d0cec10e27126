"""One-off studies behind sections of ``docs/results``, each a module with ``main()``.

Run one as ``python -m ragnet.bench.studies.<name> --help``; most need the benchmark data, the
local GGUF models or extra packages, and they read and write the results folders of a clone
(:data:`RESULTS`). Their docstrings keep the dates and commits they were run at.
"""

from __future__ import annotations

from pathlib import Path

#: The repository a clone's studies read from and write to, and its results folder.
REPO_ROOT = Path(__file__).resolve().parents[3]
RESULTS = REPO_ROOT / "docs" / "results"

#: Every study module, by name (``ragnet.bench.studies.<name>``).
STUDIES = (
    "answer_recheck_probe",
    "bm25_threshold_bench",
    "demo_profile_calls",
    "layout_per_question",
    "llama_settings",
    "onnx_fusion_experiment",
    "openvino_experiment",
    "question_last_probe",
    "question_last_summarize",
    "served_lm_hang",
    "sufficiency_decomposed_variants",
    "sufficiency_prompt_variants",
)


def parser(doc: str | None, prog: str):
    """An ``argparse`` parser whose help is the study's docstring, unwrapped as written."""
    import argparse

    return argparse.ArgumentParser(prog=f"python -m ragnet.bench.studies.{prog}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def result_rows(folder: str) -> list[dict]:
    """The rows of ``docs/results/<folder>``: its ``results.jsonl``, or the compressed
    ``results.jsonl.gz`` the repository keeps."""
    import gzip
    import json

    path = RESULTS / folder / "results.jsonl"
    opener = open if path.is_file() else gzip.open
    with opener(path if path.is_file() else path.with_name("results.jsonl.gz"), "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
