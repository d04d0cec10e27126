"""A tiny distractor-style benchmark written by the tests, and a scripted LM that answers it.

Three questions, three paragraphs each (one gold), with ``splits/tiny.{dev,acceptance}.txt``.
The scripted answers: q1 exact ("Tokyo"), q2 a paraphrase the judge accepts ("Fleming"),
q3 wrong ("the Nile", the judge rejects it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.programs.scripted import ProgramLM

PARAS = {
    "Tokyo": "Tokyo is the capital of Japan and one of the largest metropolitan areas on Earth.",
    "Paris": "Paris is the capital of France and sits on the Seine river.",
    "Berlin": "Berlin is the capital of Germany. The Berlin Wall fell in 1989.",
    "Penicillin": "Alexander Fleming discovered penicillin in 1928, the first widely used antibiotic.",
    "Coffee": "Coffee is brewed from roasted beans of the Coffea plant and contains caffeine.",
    "Tea": "Tea is an aromatic beverage prepared by pouring hot water over cured leaves.",
    "Amazon River": "The Amazon River in South America carries more water than any other river in the world.",
    "Sahara": "The Sahara is the largest hot desert in the world, covering much of North Africa.",
    "Chess": "Chess is a strategy board game for two players on a checkered board of 64 squares.",
}

QUESTIONS = [
    ("q1", "What is the capital of Japan?", ["Tokyo"], "Tokyo", ["Tokyo", "Paris", "Berlin"], "bridge", "easy"),
    ("q2", "Who discovered penicillin?", ["Alexander Fleming"], "Penicillin", ["Penicillin", "Coffee", "Tea"],
     "comparison", "hard"),
    ("q3", "Which river carries the most water?", ["Amazon River"], "Amazon River",
     ["Sahara", "Amazon River", "Chess"], "bridge", "medium"),
]

ANSWERS = {"q1": "Tokyo", "q2": "Fleming", "q3": "the Nile"}


def record(qid, question, answers, gold, titles, qtype, level) -> dict:
    return {"id": qid, "question": question, "answers": answers, "gold_titles": [gold],
            "gold_sentences": [[gold, 0]], "type": qtype, "level": level,
            "context": [{"title": t, "text": PARAS[t], "sentences": [PARAS[t]]} for t in titles]}


def write_tiny_set(root: Path, name: str = "tiny", dev=("q1", "q2", "q3"), acceptance=()) -> Path:
    """``root/<name>/questions.jsonl`` and ``root/splits/<name>.*.txt``; returns the data dir."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.jsonl").write_text("\n".join(json.dumps(record(*q)) for q in QUESTIONS) + "\n",
                                             encoding="utf-8")
    (root / "splits").mkdir(exist_ok=True)
    (root / "splits" / f"{name}.dev.txt").write_text("\n".join(dev) + "\n", encoding="utf-8")
    (root / "splits" / f"{name}.acceptance.txt").write_text("\n".join(acceptance) + ("\n" if acceptance else ""),
                                                             encoding="utf-8")
    return root


def _question(prompt: str) -> str:
    found = re.findall(r"\[\[ ## question ## \]\]\s*\n(.*)", prompt)
    return found[-1].strip() if found else ""


def _qid(prompt: str) -> str | None:
    q = _question(prompt)
    return next((qid for qid, text, *_ in QUESTIONS if text == q), None)


def answer(prompt: str, n: int) -> dict:
    qid = _qid(prompt)
    return {"answer": ANSWERS.get(qid, "unknown"), "evidence_ids": []}


def judge(prompt: str, n: int) -> dict:
    prediction = re.findall(r"\[\[ ## prediction ## \]\]\s*\n(.*)", prompt)
    ok = bool(prediction) and "Fleming" in prediction[-1]
    return {"rationale": "same person" if ok else "different", "match": ok}


def tiny_lm() -> ProgramLM:
    """The scripted LM: answers by question, judges "Fleming" a match, everything else not."""
    return ProgramLM(answer=answer, judge=judge)
