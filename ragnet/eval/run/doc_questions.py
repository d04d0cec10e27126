"""Questions over your own documents: a plain questions file, a folder of documents, and where
each answer is stated (file, page or section), for ``ragnet eval --docs FOLDER --data FILE``.

A benchmark names its gold evidence by Wikipedia title; a team's manuals name it by place: the
file, and the page (PDF) or section (HTML, DOCX, Markdown heading path) that states the answer.
One JSON object per line:

``id``, ``question``, ``answers``
    as in every ragnet questions file (``answers``: short answers, any one counts).
``kind`` (or ``type``)
    optional: ``lookup``, ``definition``, ``numeric``, ``two-part``..., reported per kind.
``gold``
    optional: the places that hold the evidence, each ``{"file": path relative to the folder,
    "page": n, "section": [headings, outermost first], "quote": "the words there",
    "role": "answer" | "link"}``; ``page``, ``section`` and ``quote`` are optional, ``role``
    defaults to ``"answer"`` (a two-part question also names the ``"link"`` place that leads
    to it).

Each answered question is scored (:func:`place_scores`, beside EM/F1 and the rest) for:

``contains``
    the right answer: a gold answer occurs in the prediction (case, punctuation and number
    formatting aside), what the report calls *right*;
``gold_place_in_context``
    a chunk from the answer's place was in the reader's context;
``answer_in_context``
    the answer itself was in the text the reader saw;
``line_in_context``
    where the answer's place has a ``quote``: the line that states the answer was shown (a
    context sentence holds :data:`QUOTE_SHARE` of the quote's words, or the context holds the
    quote whole), finer than the place, which a pack of selected sentences can hold without it;
``gold_cited`` / ``gold_cited_first``
    a citation (the first citation) points at the answer's place;

and, as for a benchmark's gold documents, ``gold_all``: every gold place (a two-part question's
link too) had a chunk in the context (:func:`ragnet.eval.metrics.gold_evidence.gold_chunks` maps each place
to the index chunks located at it, :func:`place_chunk_ids`).

Example:
    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "questions.jsonl"
    >>> _ = path.write_text(json.dumps({"id": "q1", "question": "Which option names the log file?",
    ...     "answers": ["--log-file"], "kind": "lookup",
    ...     "gold": [{"file": "manual.pdf", "page": 4, "quote": "--log-file names the log."}]}) + "\\n")
    >>> [q] = load_doc_questions(path)
    >>> q.type, q.places[0].page, q.places[0].key()
    ('lookup', 4, 'manual.pdf, p. 4')
    >>> at_place({"file": "manual.pdf", "page": 3, "page_end": 4}, q.places[0])
    True
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ragnet.corpus.loader import check_record_question, parse_jsonl_record
from ragnet.corpus.locations import file_key
from ragnet.errors import InputError
from ragnet.eval.run.question_splits import split_ids, split_of

__all__ = ["DocQuestion", "GoldPlace", "PLACE_METRICS", "QUOTE_SHARE", "ROLES", "at_place", "check_places",
           "doc_question", "load_doc_questions", "place_chunk_ids", "place_problem", "place_scores",
           "place_warning_lines", "quote_shown"]

#: What a gold place is to its question.
ROLES = ("answer", "link")
#: The per-question figures :func:`place_scores` adds to every row with gold places, averaged like
#: EM in the report (``line_in_context``, only where a place has a quote, is reported over those
#: questions in the documents table instead).
PLACE_METRICS = ("gold_place_in_context", "answer_in_context", "gold_cited", "gold_cited_first")
#: The share of a quote's words one shown sentence must hold for the quote's line to count as shown.
QUOTE_SHARE = 0.6


def quote_shown(quote: str, texts: Sequence[str]) -> bool:
    """Whether the line ``quote`` states was shown in ``texts`` (the passages the reader saw): one
    of their sentences holds :data:`QUOTE_SHARE` of the quote's distinct words, or a passage holds
    the quote's words in order (a quote of several sentences); words as citations compare them
    (:func:`ragnet.core.support.answer_key`).

    Example:
        >>> quote_shown("Default is '/tmp /usr/tmp'.", ["Other lines. … Default is '/tmp /usr/tmp /afs'."])
        True
        >>> quote_shown("Default is '/tmp /usr/tmp'.", ["The default is set by the --prunepaths option."])
        False
    """
    from ragnet.core.support import answer_key, states_answer
    from ragnet.corpus.sentence_split import split_sentences

    want = set(answer_key(quote))
    if not want:
        return False
    for text in texts:
        if states_answer(quote, text):
            return True
        for part in text.split("…"):
            for sentence in split_sentences(part):
                if len(want & set(answer_key(sentence))) >= QUOTE_SHARE * len(want):
                    return True
    return False


@dataclass(frozen=True)
class GoldPlace:
    """Where a question's evidence is: ``file`` (relative to the folder), and ``page`` or
    ``section`` when known, the ``quote`` found there and its ``role``."""

    file: str
    page: int | None = None
    section: tuple[str, ...] | None = None
    quote: str = ""
    role: str = "answer"

    def key(self) -> str:
        """The place in one line, as reports name it: ``file, p. 4`` or ``file › Section``."""
        where = self.file + (" › " + " › ".join(self.section) if self.section else "")
        return where + (f", p. {self.page}" if self.page is not None else "")


@dataclass(frozen=True)
class DocQuestion:
    """A question over a folder of documents, with its gold places (and the other fields ragnet's
    scoring reads from a benchmark record, empty)."""

    id: str
    question: str
    answers: list[str]
    places: tuple[GoldPlace, ...] = ()
    type: str | None = None
    level: Any = None
    gold_titles: list[str] = field(default_factory=list)
    gold_passage_ids: Any = None
    gold_sentences: Any = None
    context: Any = None
    gold_paragraph_idxs: Any = None
    line: int | None = None  # its line in the questions file, for messages about it
    split: str | None = None  # tune or check (ragnet.eval.run.question_splits), or None for a split file's

    def answer_places(self) -> tuple[GoldPlace, ...]:
        """The places that state the answer (all places when none is marked ``"answer"``)."""
        return tuple(p for p in self.places if p.role == "answer") or self.places


def _place(item: Any, where: Path, line: int, i: int) -> GoldPlace:
    def bad(message: str) -> InputError:
        return InputError(f"gold[{i}]: {message}", path=where, line=line)

    if not isinstance(item, Mapping) or not isinstance(item.get("file"), str) or not item["file"].strip():
        raise bad("must be an object with a 'file' (the path relative to the documents folder)")
    page = item.get("page")
    if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
        raise bad(f"'page' must be a positive integer, got {page!r}")
    section = item.get("section")
    if isinstance(section, str):
        section = [section]
    if section is not None and (not isinstance(section, list) or not all(isinstance(h, str) for h in section)):
        raise bad("'section' must be a list of headings (outermost first)")
    quote = item.get("quote", "")
    if not isinstance(quote, str):
        raise bad("'quote' must be a string")
    role = item.get("role", "answer")
    if role not in ROLES:
        raise bad(f"'role' must be one of {', '.join(ROLES)}, got {role!r}")
    return GoldPlace(file=file_key(item["file"]), page=page, section=tuple(section) if section else None,
                     quote=quote, role=role)


def doc_question(rec: Mapping[str, Any], where: str | Path, line: int | None = None) -> DocQuestion:
    """One record of a questions file over documents (see the module docstring), read as
    :func:`load_doc_questions` reads each line: a writer of such a file (``ragnet serve``'s
    marks) checks its row with it before the row is written.

    Raises:
        InputError: a missing or malformed field (naming ``where`` and ``line``).

    Example:
        >>> doc_question({"id": 7, "question": "Which port?", "answers": "8000",
        ...               "gold": [{"file": "./guide.md", "section": "Serving"}]}, "marks.jsonl").places
        (GoldPlace(file='guide.md', page=None, section=('Serving',), quote='', role='answer'),)
    """
    where = Path(where)
    for key in ("id", "question", "answers"):
        if key not in rec:
            raise InputError(f"record has no {key!r} field", path=where, line=line)
    question, answers = rec["question"], rec["answers"]
    check_record_question(question, where, line)
    answers = [answers] if isinstance(answers, str) else answers
    if not isinstance(answers, list) or not answers or not all(isinstance(a, (str, int, float)) for a in answers):
        raise InputError("'answers' must be a non-empty list of strings", path=where, line=line)
    gold = rec.get("gold") or []
    if not isinstance(gold, list):
        raise InputError("'gold' must be a list of places", path=where, line=line)
    qid = str(rec["id"])
    kind = rec.get("kind", rec.get("type"))
    return DocQuestion(id=qid, question=question.strip(), answers=[str(a) for a in answers],
                       places=tuple(_place(item, where, line, i) for i, item in enumerate(gold)),
                       type=str(kind) if kind is not None else None, level=rec.get("level"),
                       line=line, split=split_of(qid))


def load_doc_questions(path: str | Path, *, ids: Sequence[str] | None = None, limit: int | None = None,
                       split: str = "all") -> list[DocQuestion]:
    """The questions of a questions file over documents (see the module docstring), in file order.

    Args:
        path: the JSONL file.
        ids: keep only these question ids (an unknown one is an error).
        limit: at most this many questions (after ``ids`` and ``split``).
        split: ``tune``, ``check``, ``all`` or a file of question ids
            (:mod:`ragnet.eval.run.question_splits`); each question records its split.

    Raises:
        InputError: a missing file, malformed JSON or fields, a duplicate id (naming file and line).
    """
    where = Path(path)
    if not where.is_file():
        raise InputError("no such questions file", path=where, argument="data")
    out: list[DocQuestion] = []
    seen: dict[str, int] = {}
    try:
        lines = where.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text (is it a JSONL file?)", path=where) from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        q = doc_question(parse_jsonl_record(line, where, lineno), where, lineno)
        if q.id in seen:
            raise InputError(f"duplicate question id {q.id!r} (first on line {seen[q.id]})", path=where, line=lineno)
        seen[q.id] = lineno
        out.append(q)
    if split != "all":
        keep = set(split_ids([q.id for q in out], split))
        out = [q for q in out if q.id in keep]
    if ids is not None:
        wanted = [str(i) for i in ids]
        unknown = [i for i in wanted if i not in seen]
        if unknown:
            raise InputError(f"unknown question id(s): {', '.join(unknown[:5])}", argument="ids")
        keep = set(wanted)
        out = [q for q in out if q.id in keep]
    if limit is not None:
        out = out[:limit]
    if not out:
        raise InputError("no questions selected", path=where, argument="data")
    return out


def check_places(index: Any, questions: Sequence[DocQuestion], where: str | Path) -> list[str]:
    """Check every gold place of ``questions`` (read from the file ``where``) against the chunks
    of ``index``, the folder they are asked over, before any LM time is spent.

    A place that no chunk lies at (a file not in the folder, a page past its last, a section it
    does not have) would score every strategy 0 on that question's place figures without a word,
    so it is an error naming the line and what the file has. A quote that no chunk at its place
    holds (:func:`quote_shown`) is returned as a warning: the text extracted from a PDF can differ
    from what a viewer shows (ligatures, hyphenation), and only ``line_in_context`` depends on it.

    Returns:
        One warning per quote not found at its place.

    Raises:
        InputError: places that match no chunk of the folder (the first five, and how many in all).
    """
    files = _chunks_by_file(index)
    errors: list[str] = []
    warnings: list[str] = []
    for q in questions:
        for place in q.places:
            at = f"line {q.line} ({q.id}), {place.key()}"
            ids = place_chunk_ids(index, place)
            if not ids:
                errors.append(f"{at}: {_what_the_file_has(place, files)}")
            elif place.quote.strip() and not quote_shown(place.quote, [c.text for c in index.get(ids)]):
                warnings.append(f"{at}: its quote is not in the text indexed there ({_short(place.quote)})")
    if errors:
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise InputError(f"{len(errors)} gold place(s) match nothing in the documents folder: "
                         + "; ".join(errors[:5]) + more, path=where)
    return warnings


def place_problem(index: Any, place: GoldPlace) -> str | None:
    """Why no chunk of ``index`` lies at ``place`` (the file is not indexed, or the pages or
    sections it has), as :func:`check_places` says it; None when some chunk does. For a writer
    that checks one place at a time (``ragnet serve``'s marks)."""
    if place_chunk_ids(index, place):
        return None
    return _what_the_file_has(place, _chunks_by_file(index))


def place_warning_lines(warnings: Sequence[str], where: str | Path, shown: int = 5) -> list[str]:
    """The lines ``ragnet eval --docs`` and ``ragnet optimize --docs`` print for :func:`check_places`'
    warnings: the first ``shown``, then how many more.

    Example:
        >>> place_warning_lines(["a", "b", "c"], "q.jsonl", shown=2)  # doctest: +NORMALIZE_WHITESPACE
        ['warning: q.jsonl: a; line in context cannot find it there',
         'warning: q.jsonl: b; line in context cannot find it there',
         'warning: q.jsonl: 1 more quotes are not in the text indexed at their places']
    """
    lines = [f"warning: {where}: {w}; line in context cannot find it there" for w in warnings[:shown]]
    if len(warnings) > shown:
        lines.append(f"warning: {where}: {len(warnings) - shown} more quotes are not in the text indexed "
                     "at their places")
    return lines


def _what_the_file_has(place: GoldPlace, files: Mapping[str, list[tuple[str, Mapping[str, Any]]]]) -> str:
    """Why no chunk lies at ``place``: the file is not indexed, or the pages or top-level sections
    it has (``files``: :func:`_chunks_by_file`)."""
    locations = [loc for _, loc in files.get(place.file, [])]
    if not locations:
        near = sorted(f for f in files if PurePosixPath(f).name == PurePosixPath(place.file).name)
        hint = f" (did you mean {near[0]}?)" if near else ""
        return f"no file {place.file} was indexed from the folder{hint}"
    pages = [p for loc in locations for p in (loc.get("page"), loc.get("page_end")) if isinstance(p, int)]
    if place.page is not None and pages and not min(pages) <= place.page <= max(pages):
        return f"{place.file} has pages {min(pages)} to {max(pages)}"
    if place.section:
        tops = list(dict.fromkeys(str((loc.get("headings") or ["(none)"])[0]) for loc in locations))
        return (f"{place.file} has no section {' › '.join(place.section)} (its top-level sections: "
                + ", ".join(_short(t, 40) for t in tops[:6]) + (", …" if len(tops) > 6 else "") + ")")
    return f"no chunk of {place.file} lies at that place"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit - 1] + "…")


def at_place(location: Mapping[str, Any] | None, place: GoldPlace) -> bool:
    """Whether a chunk or citation ``location`` (``file``, ``page``, ``page_end``, ``headings``)
    lies at ``place``: the same file, a page range that holds its page, a heading path inside its
    section (the section itself or one of its subsections).

    Example:
        >>> at_place({"file": "a.html", "headings": ["Rules", "Variables"]}, GoldPlace("a.html", section=("Rules",)))
        True
        >>> at_place({"file": "a.pdf", "page": 2}, GoldPlace("a.pdf", page=3))
        False
    """
    if not isinstance(location, Mapping) or file_key(location.get("file") or "") != place.file:
        return False
    if place.page is not None:
        first = location.get("page")
        if not isinstance(first, int):
            return False
        last = location.get("page_end") if isinstance(location.get("page_end"), int) else first
        if not first <= place.page <= last:
            return False
    if place.section:
        headings = tuple(location.get("headings") or ())
        if headings[:len(place.section)] != place.section:
            return False
    return True


# index -> {file: [(chunk id, location)]}, built once per index (weak keys: never keeps an index alive)
_BY_FILE: "weakref.WeakKeyDictionary[Any, tuple[int, dict[str, list[tuple[str, Mapping[str, Any]]]]]]" = (
    weakref.WeakKeyDictionary())


def place_chunk_ids(index: Any, place: GoldPlace) -> list[str]:
    """The ids of ``index``'s chunks located at ``place`` (:func:`at_place`), in index order."""
    return [cid for cid, loc in _chunks_by_file(index).get(place.file, []) if at_place(loc, place)]


def _chunks_by_file(index: Any) -> dict[str, list[tuple[str, Mapping[str, Any]]]]:
    """``index``'s chunks by source file: ``{file: [(chunk id, location)]}``, in index order,
    read once per index."""
    try:
        cached = _BY_FILE.get(index)
    except TypeError:
        cached = None
    if cached is None or cached[0] != len(index.chunks):
        by_file: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for chunk in index.chunks:
            loc = chunk.metadata.get("location") if isinstance(chunk.metadata, Mapping) else None
            if isinstance(loc, Mapping) and loc.get("file"):
                by_file.setdefault(file_key(loc["file"]), []).append((chunk.id, loc))
        cached = (len(index.chunks), by_file)
        try:
            _BY_FILE[index] = cached
        except TypeError:
            pass
    return cached[1]


def _located(index: Any, ids: Sequence[str]) -> list[Mapping[str, Any]]:
    out = []
    for chunk in index.get([i for i in ids if i in index]) if index is not None else []:
        loc = chunk.metadata.get("location") if isinstance(chunk.metadata, Mapping) else None
        if isinstance(loc, Mapping):
            out.append(loc)
    return out


def place_scores(record: Any, pred: Any, index: Any = None) -> dict[str, Any]:
    """The place figures of one answered question (see the module docstring); ``{}`` for a record
    without gold places, so it can score any questions file. A scoring hook of
    :class:`ragnet.eval.run.qa_evaluator.QAEvaluator`.

    Example:
        >>> q = DocQuestion(id="q", question="?", answers=["8"], places=(GoldPlace("m.pdf", page=2),))
        >>> pred = {"context": [], "passages": [{"text": "The default is 8."}],
        ...         "citations": [{"file": "m.pdf", "page": 1}, {"file": "m.pdf", "page": 2}]}
        >>> scores = place_scores(q, pred)
        >>> scores["gold_cited"], scores["gold_cited_first"], scores["answer_in_context"]
        (1.0, 0.0, 1.0)
    """
    from ragnet.core.support import states_answer
    from ragnet.eval.run.records import get_field

    places = tuple(getattr(record, "places", ()) or ())
    if not places:
        return {}
    answer_places = record.answer_places()
    context = _located(index, [str(c) for c in get_field(pred, "context", []) or []])
    texts = [str(p.get("text") or "") for p in get_field(pred, "passages", []) or [] if isinstance(p, Mapping)]
    shown = " ".join(texts)
    cites = [c for c in get_field(pred, "citations", []) or [] if isinstance(c, Mapping)]
    quotes = [p.quote for p in answer_places if p.quote.strip()]

    def anywhere(locations: Sequence[Mapping[str, Any]], wanted: Sequence[GoldPlace]) -> float:
        return float(any(at_place(loc, p) for loc in locations for p in wanted))

    return {
        "gold_place_in_context": anywhere(context, answer_places),
        "answer_in_context": float(any(states_answer(a, shown) for a in record.answers)),
        **({"line_in_context": float(any(quote_shown(q, texts) for q in quotes))} if quotes else {}),
        "gold_cited": anywhere(cites, answer_places),
        "gold_cited_first": anywhere(cites[:1], answer_places),
    }
