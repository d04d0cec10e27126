"""Check the real-document dev set's questions against the built folder, as ragnet reads it.

    python -m benchmarks.realdocs.check [--docs DIR] [--questions FILE]

Every question must have a unique id, a known kind, short answers and gold places; every gold
place must name a file of the folder and a place in it (``page`` for a PDF, ``section`` for
HTML, DOCX and Markdown), and its quote must occur (case and spacing aside) at that place of the
text ragnet reads. Exactly one place states the answer (``role: "answer"``), and an answer occurs
in its quote (numbers compared without thousands separators). A two-part question has, besides
its answer place, a ``link`` place on another page or in another section. Over the whole set:
at least 80 questions, at least 25% of them two-part, and no document holding more than a quarter
of the answer places.

Prints a summary (questions per kind and per document), then each problem as ``id: problem``;
exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from benchmarks.realdocs import places
from benchmarks.realdocs.build import default_out

__all__ = ["KINDS", "MIN_QUESTIONS", "MIN_TWO_PART", "MAX_FILE_SHARE", "QUESTIONS", "load_questions",
           "check_composition", "check_question", "check_questions", "summary", "main"]

KINDS = ("lookup", "definition", "numeric", "two-part")
ROLES = ("answer", "link")
MIN_QUESTIONS = 80
MIN_TWO_PART = 0.25
MAX_FILE_SHARE = 0.25
#: What the committed set is made of (``check_composition``): enough questions over enough real PDF
#: manuals from enough producers, and PDFs ragnet's own builder renders from text a minority.
SET_QUESTIONS = 300
SET_REAL_PDFS = 15
SET_PRODUCERS = 4
MAX_RENDERED_SHARE = 0.25
#: The committed questions, beside this module.
QUESTIONS = Path(__file__).with_name("questions.jsonl")
_ID = re.compile(r"^rd-\d{3}$")


def load_questions(path: Path) -> list[dict[str, Any]]:
    """The questions of a JSON Lines file (blank lines skipped).

    Raises:
        ValueError: a line is not a JSON object (naming the line).
    """
    out = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: invalid JSON: {exc}") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: not a JSON object")
        out.append(record)
    return out


def _is_pdf(file: str) -> bool:
    return file.lower().endswith(".pdf")


def _answer_in(answers: Iterable[str], quote: str) -> bool:
    """Whether some answer occurs in the quote as a whole token sequence (not inside a longer word)."""
    text = places.normalise(quote)
    for answer in answers:
        needle = places.normalise(answer)
        if needle and re.search(rf"(?<![\w]){re.escape(needle)}(?![\w])", text):
            return True
    return False


def _where(gold: dict) -> tuple:
    """What makes two gold places the same place: the file and its page or section."""
    return (gold.get("file"), gold.get("page"), tuple(gold.get("section") or ()))


def _check_place(gold: dict, docs: dict) -> list[str]:
    """Problems with one gold place: its file, its page or section, its quote."""
    file = gold.get("file")
    if file not in docs:
        return [f"gold file {file!r} is not in the folder"]
    if gold.get("role") not in ROLES:
        return [f"gold role {gold.get('role')!r} is not one of {', '.join(ROLES)}"]
    quote = gold.get("quote")
    if not isinstance(quote, str) or len(quote.split()) < 2:
        return [f"gold quote in {file} must be a sentence, got {quote!r}"]
    doc = docs[file]
    if _is_pdf(file):
        if not isinstance(gold.get("page"), int) or isinstance(gold.get("page"), bool):
            return [f"gold place in {file} needs an integer 'page'"]
        want = ("page", gold["page"])
    else:
        if not isinstance(gold.get("section"), list):
            return [f"gold place in {file} needs a 'section' (list of headings)"]
        want = ("headings", gold["section"])
    found = [places.place_of(doc, start, end) for start, end in places.find_all(doc.text, quote)]
    if not found:
        return [f"quote not found in {file}: {quote[:70]!r}"]
    key, value = want
    if not any(place.get(key, [] if key == "headings" else None) == value
               and (key != "page" or place.get("page_end", value) == value) for place in found):
        seen = sorted({str(place.get(key)) for place in found})
        return [f"quote found in {file} but not at {key} {value!r} (at {', '.join(seen)}): {quote[:60]!r}"]
    return []


def check_question(question: dict, docs: dict) -> list[str]:
    """Problems with one question (each without the id), empty when it is right.

    Args:
        question: one record of the questions file.
        docs: the folder's documents by file (:func:`benchmarks.realdocs.places.load`).
    """
    problems = []
    if not isinstance(question.get("question"), str) or not question["question"].strip().endswith("?"):
        problems.append("'question' must be a question (text ending with '?')")
    answers = question.get("answers")
    if not (isinstance(answers, list) and answers and all(isinstance(a, str) and a.strip() for a in answers)):
        return problems + ["'answers' must be a non-empty list of non-empty strings"]
    if question.get("kind") not in KINDS:
        problems.append(f"kind {question.get('kind')!r} is not one of {', '.join(KINDS)}")
    gold = question.get("gold")
    if not (isinstance(gold, list) and gold and all(isinstance(g, dict) for g in gold)):
        return problems + ["'gold' must be a non-empty list of places"]
    for place in gold:
        problems.extend(_check_place(place, docs))
    answer_places = [g for g in gold if g.get("role") == "answer"]
    links = [g for g in gold if g.get("role") == "link"]
    if len(answer_places) != 1:
        problems.append(f"needs exactly one answer place, has {len(answer_places)}")
    elif not _answer_in(answers, answer_places[0].get("quote", "")):
        problems.append(f"no answer ({' | '.join(answers)}) occurs in the answer place's quote")
    if question.get("kind") == "two-part":
        if not links:
            problems.append("a two-part question needs a link place besides its answer place")
        elif answer_places and all(_where(link) == _where(answer_places[0]) for link in links):
            problems.append("a two-part question's link place must be on another page or in another section")
    elif links:
        problems.append(f"a {question.get('kind')} question has link places; make it two-part or drop them")
    return problems


def check_questions(docs: dict, questions: list[dict]) -> list[str]:
    """Every problem of the set, each as ``id: problem``.

    Args:
        docs: the folder's documents by file (:func:`benchmarks.realdocs.places.load`).
        questions: the questions' records.

    Returns:
        The problems; empty when the set passes.
    """
    problems = []
    ids = Counter(q.get("id") for q in questions)
    for question in questions:
        qid = question.get("id")
        if not isinstance(qid, str) or not _ID.match(qid):
            problems.append(f"{qid}: id must look like rd-001")
        elif ids[qid] > 1:
            problems.append(f"{qid}: id used {ids[qid]} times")
        problems.extend(f"{qid}: {problem}" for problem in check_question(question, docs))
    if len(questions) < MIN_QUESTIONS:
        problems.append(f"set: {len(questions)} questions, fewer than {MIN_QUESTIONS}")
    two_part = sum(q.get("kind") == "two-part" for q in questions)
    if questions and two_part < MIN_TWO_PART * len(questions):
        problems.append(f"set: {two_part} of {len(questions)} questions are two-part, fewer than "
                        f"{MIN_TWO_PART:.0%}")
    for file, count in _answer_files(questions).items():
        if count > MAX_FILE_SHARE * len(questions):
            problems.append(f"set: {file} holds {count} of {len(questions)} answers, more than {MAX_FILE_SHARE:.0%}")
    return problems


def check_composition(questions: list[dict], sources: Iterable | None = None) -> list[str]:
    """What the committed set must be made of: at least ``SET_QUESTIONS`` questions, answers in at
    least ``SET_REAL_PDFS`` real PDF manuals (copied, not rendered here) from ``SET_PRODUCERS``
    producers, and under ``MAX_RENDERED_SHARE`` of the questions answered in PDFs the builder renders.

    Args:
        questions: the questions' records.
        sources: the folder's sources (default: :data:`benchmarks.realdocs.build.SOURCES`).
    """
    from benchmarks.realdocs.build import SOURCES

    by_file = {s.out: s for s in (SOURCES if sources is None else sources)}
    answered = _answer_files(questions)
    real = {f for f in answered if f in by_file and by_file[f].kind == "copy" and _is_pdf(f)}
    producers = {by_file[f].producer for f in real if by_file[f].producer}
    rendered = sum(n for f, n in answered.items() if f in by_file and by_file[f].kind in ("pdf", "pdf-flat"))
    problems = []
    if len(questions) < SET_QUESTIONS:
        problems.append(f"set: {len(questions)} questions, fewer than {SET_QUESTIONS}")
    if len(real) < SET_REAL_PDFS:
        problems.append(f"set: answers in {len(real)} real PDF manuals, fewer than {SET_REAL_PDFS}")
    if len(producers) < SET_PRODUCERS:
        problems.append(f"set: real PDFs from {len(producers)} producers ({', '.join(sorted(producers))}), "
                        f"fewer than {SET_PRODUCERS}")
    if rendered >= MAX_RENDERED_SHARE * max(len(questions), 1):
        problems.append(f"set: {rendered} of {len(questions)} answers in PDFs rendered here, "
                        f"{MAX_RENDERED_SHARE:.0%} or more")
    return problems


def _answer_files(questions: list[dict]) -> Counter:
    return Counter(g.get("file") for q in questions for g in q.get("gold") or []
                   if isinstance(g, dict) and g.get("role") == "answer")


def summary(questions: list[dict]) -> str:
    """Questions per kind and per document (the answer place's file)."""
    kinds = Counter(q.get("kind") for q in questions)
    lines = [f"{len(questions)} questions: " + ", ".join(f"{kind} {kinds[kind]}" for kind in KINDS)]
    lines += [f"  {count:3d}  {file}" for file, count in sorted(_answer_files(questions).items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.realdocs.check [--docs DIR] [--questions FILE]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realdocs.check", description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=None, help=f"the built folder (default {default_out()})")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help=f"questions file (default {QUESTIONS})")
    args = parser.parse_args(argv)
    folder = args.docs or default_out()
    if not folder.is_dir():
        print(f"error: no folder {folder}; build it: python -m benchmarks.realdocs.build --out {folder}",
              file=sys.stderr)
        return 2
    questions = load_questions(args.questions)
    problems = check_questions(places.load(folder), questions)
    if args.questions.resolve() == QUESTIONS.resolve():  # the committed set: its make-up too
        problems += check_composition(questions)
    print(summary(questions))
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem{'' if len(problems) == 1 else 's'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
