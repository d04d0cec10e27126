"""One-off studies behind sections of ``docs/results``, each a module with ``main()``.

Run one as ``python -m benchmarks.studies.<name> --help``; most need the benchmark data, the
local GGUF models or extra packages, and they read and write the results folders of a clone
(:data:`RESULTS`). Their docstrings keep the dates and commits they were run at.
"""

from __future__ import annotations

from pathlib import Path

#: The repository a clone's studies read from and write to, and its results folder.
REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "docs" / "results"

#: Every study module, by name (``benchmarks.studies.<name>``).
STUDIES = (
    "answer_alternatives_probe",
    "answer_line_in_pack",
    "answer_verify_probe",
    "answer_pick_probe",
    "answer_recheck_probe",
    "best_chunk_whole",
    "bm25_threshold_bench",
    "demo_profile_calls",
    "dense_when_confident",
    "ingest_pdfs",
    "key_lines_probe",
    "layout_per_question",
    "llama_settings",
    "old_commit_answers",
    "pdf_type_size_cost",
    "onnx_fusion_experiment",
    "openvino_experiment",
    "plain_text_manuals",
    "question_last_probe",
    "question_last_summarize",
    "reader_adapter",
    "reader_threads_timing",
    "request_stop_timing",
    "router_calibration",
    "rows_overlay",
    "scope_search_timing",
    "served_lm_hang",
    "sufficiency_decomposed_variants",
    "sufficiency_prompt_variants",
)


def parser(doc: str | None, prog: str):
    """An ``argparse`` parser whose help is the study's docstring, unwrapped as written."""
    import argparse

    return argparse.ArgumentParser(prog=f"python -m benchmarks.studies.{prog}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def result_rows(folder: str) -> list[dict]:
    """The rows of ``docs/results/<folder>``: its ``results.jsonl``, or the compressed
    ``results.jsonl.gz`` ``python -m benchmarks.fetch_rows`` restores
    (:func:`ragnet.eval.run.results_file.read_finished_rows`)."""
    from ragnet.eval.run.results_file import read_finished_rows

    return read_finished_rows(RESULTS / folder)


def rows_done(out: Path) -> set[str]:
    """The question ids already in a study's rows file ``out`` (none when it does not exist yet):
    a study appends one row per question and skips these when it runs again."""
    import json

    if not out.exists():
        return set()
    return {json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines() if line.strip()}


def pending(out: Path, items, half: str) -> list:
    """The items (dicts with an ``id``) of ``half`` (see :func:`in_half`) whose rows are not in
    ``out`` yet, in order: what a resumed study still has to ask. ``out``'s folder is created."""
    out.parent.mkdir(parents=True, exist_ok=True)
    done = rows_done(out)
    return [item for item in items if item["id"] not in done and in_half(item["id"], half)]


def in_half(question_id: str, half: str) -> bool:
    """Whether a real-document question (``rd-NNN``) is in ``half``: "all", "odd" or "even" by its
    number, the split that lets two LM runs share the dev set one core each.

    Example:
        >>> in_half("rd-007", "odd"), in_half("rd-007", "even"), in_half("rd-008", "all")
        (True, False, True)
    """
    parity = {"all": None, "odd": 1, "even": 0}[half]
    return parity is None or int(question_id.split("-")[1]) % 2 == parity


def encode_with(encoder, texts: list[str], batch_size: int = 64):
    """``Embedder.encode`` (length-sorted batches, input order restored, normalised) through an
    ONNX-style ``encoder`` of an embedding study."""
    from ragnet.index.embedder import Embedder

    emb = Embedder(backend="onnx", batch_size=batch_size)
    emb._onnx = encoder
    return emb.encode(texts)


def time_against_torch(torch_embedder, encoders: dict, texts: list[str], reference, rounds: int,
                       digits: int | None = None) -> tuple[dict[str, list[float]], dict[str, tuple[float, float]]]:
    """Seconds per round of torch and of each encoder on ``texts``, rounds interleaved, and each
    encoder's (min, mean) cosine to torch's ``reference`` vectors (rounded to ``digits``)."""
    import time

    times: dict[str, list[float]] = {k: [] for k in ["torch", *encoders]}
    cos: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        t = time.perf_counter()
        torch_embedder.encode(texts)
        times["torch"].append(time.perf_counter() - t)
        for k, enc in encoders.items():
            t = time.perf_counter()
            v = encode_with(enc, texts)
            times[k].append(time.perf_counter() - t)
            c = (v * reference).sum(1)
            low, mean = float(c.min()), float(c.mean())
            cos[k] = (low, mean) if digits is None else (round(low, digits), round(mean, digits))
    return times, cos


def print_speeds(times: dict[str, list[float]], cos: dict[str, tuple[float, float]], n_texts: int, *,
                 width: int = 20, cos_label: str = "cos", rounds: bool = False) -> None:
    """One line per encoder: texts/s (median round), speed-up over torch, cosines to torch."""
    import statistics

    base = statistics.median(times["torch"])
    for k, ts in times.items():
        m = statistics.median(ts)
        tail = f"  rounds {[round(x, 2) for x in ts]}" if rounds else ""
        print(f"{k:{width}s} {n_texts/m:7.1f} texts/s  x{base/m:4.2f}  {cos_label} {cos.get(k, (1, 1))}{tail}", flush=True)
