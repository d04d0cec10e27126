"""PDF files: the text layer of every page, with each page's offset, read with ``pypdf``.

One document per file. Running heads and footers (a title or page number printed on every page:
:func:`strip_running_lines`) are removed, words hyphenated across a line break are joined
(:func:`join_hyphenated`), pages are joined by a blank line (a line break where a sentence runs
on across the break: :func:`page_separator`), and ``positions``
holds each page's offset as ``{"page": n}`` (1-based); a page without text adds no text and no
position. Where the PDF has sections (its outline, else numbered heading lines, else lines set
larger than its body text: :mod:`ragnet.corpus.formats.pdf_sections`), each place also holds the heading path in force,
``{"page": 8, "headings": ["2 Usage", "2.5 Memory management"]}``, and a section that starts
mid-page gets a position of its own at its heading. The author and creation date come from the document information dictionary
(``/Author``, ``/CreationDate``, kept as ``date``: see :func:`ragnet.corpus.formats.date_metadata`
for why it is not the document's ``year``); the title from ``/Title``, else the running head
(:func:`running_head`), else the first line of text.

Refused, one line each naming the file: an encrypted file that does not open with an empty
password; a file that is not a PDF, is truncated (no ``%%EOF`` marker at its end) or that
``pypdf`` cannot parse; a file where no page has a text layer (a scan: run OCR first, for
example ``ocrmypdf``); a file whose pages hold more drawing instructions than ``--max-file-mb``
allows (:class:`ragnet.corpus.limits.FileBounds`, checked before any text is read). A file where only some pages lack text is read, with a note naming those
pages.

``pypdf`` is the default engine: pure Python, it reads the benchmark PDFs
(``python -m benchmarks.studies.ingest_pdfs``) faster than ``pdfminer.six`` with the same words
recovered; ``engine="pdfminer"`` reads with ``pdfminer.six`` instead, when it is installed.

Example:
    >>> from fpdf import FPDF  # doctest: +SKIP
    >>> pdf = FPDF(); pdf.set_font("Helvetica", size=12)  # doctest: +SKIP
    >>> for words in ("Page one.", "Page two."):  # doctest: +SKIP
    ...     pdf.add_page(); pdf.cell(text=words)
    >>> got = read_pdf(bytes(pdf.output()), "two.pdf")  # doctest: +SKIP
    >>> got.text, got.positions  # doctest: +SKIP
    ('Page one.\\n\\nPage two.', ((0, {'page': 1}), (11, {'page': 2})))
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import re
import warnings
from typing import Any, Iterator

from ragnet.corpus.formats import Extracted, TextBuilder, date_metadata, require_reader
from ragnet.corpus.formats.pdf_sections import numbered_headings, outline_entries, section_marks, type_size_headings
from ragnet.corpus.limits import FileBounds
from ragnet.errors import InputError

__all__ = ["read_pdf", "page_separator", "running_head", "running_line_indexes", "strip_running_lines", "ENGINES"]

#: PDF text engines ``read_pdf`` knows.
ENGINES = ("pypdf", "pdfminer")

_EOF_WINDOW = 4096  # bytes at the end of the file searched for the %%EOF marker
# pypdf's log messages when objects the pages need are missing: the file lost part of itself,
# and what text is left would be part of a document (a repaired cross-reference table alone is
# common in files other tools edited and loses nothing)
_DAMAGE = re.compile(r"not defined|page tree entry|truncat|unexpected end", re.I)


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


@contextlib.contextmanager
def _quiet(logger_name: str, into: list[str] | None = None) -> Iterator[None]:
    """Keep a parser's recoverable-problem chatter (log records, warnings) off the user's screen,
    collecting the log messages in ``into``: what matters is reported as one InputError."""
    logger = logging.getLogger(logger_name)
    level, propagate = logger.level, logger.propagate
    handler = _Collect(into if into is not None else [])
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _check_container(data: bytes, where: str) -> None:
    head = data[:1024].lstrip()
    if not head.startswith(b"%PDF-") and b"%PDF-" not in data[:1024]:
        raise InputError("not a PDF file (no %PDF- header); is it another format renamed .pdf?", path=where)
    if b"%%EOF" not in data[-_EOF_WINDOW:]:
        raise InputError("truncated or damaged PDF (no %%EOF marker at the end of the file); "
                         "download or export it again", path=where)


def _pypdf_pages(data: bytes, where: str, bounds: FileBounds | None = None) -> tuple[list[str], dict[str, Any]]:
    pypdf = require_reader("pdf", where)
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    problems: list[str] = []
    with _quiet("pypdf", problems):
        try:
            reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted:
                try:
                    opened = reader.decrypt("")
                except DependencyError:
                    raise InputError("encrypted PDF whose cipher needs the cryptography package; run: pip install "
                                     "cryptography", path=where) from None
                if not opened:
                    raise InputError("encrypted PDF (it needs a password); save a copy without encryption and "
                                     "index that", path=where)
            (bounds if bounds is not None else FileBounds()).check_pdf(reader, where)  # before any text is read
            read = [_sized_text(page) for page in reader.pages]
            pages = [text for text, _ in read]
            damage = next((m for m in problems if _DAMAGE.search(m)), None)
            if damage is not None:
                raise InputError(f"damaged PDF: parts of it are missing (pypdf: {' '.join(damage.split())[:120]}); "
                                 "download or export it again", path=where)
        except InputError:
            raise
        except FileNotDecryptedError:
            raise InputError("encrypted PDF (it needs a password); save a copy without encryption and index that",
                             path=where) from None
        except (PdfReadError, Exception) as exc:  # a damaged file can fail anywhere inside the parser
            raise InputError(f"malformed PDF, pypdf cannot read it: {_one_line(exc)}", path=where) from None
        info: dict[str, Any] = {}
        try:
            meta = reader.metadata
            if meta is not None:
                info = {"title": meta.get("/Title"), "author": meta.get("/Author")}
                try:
                    info["created"] = meta.creation_date
                except Exception:  # an unparsable /CreationDate is no reason to refuse the text
                    info["created"] = None
        except Exception:
            info = {}
        info["outline"] = outline_entries(reader)
        info["type_sizes"] = [lines for _, lines in read]
        try:  # the page numbers the document prints ("iv", "16"), when they are not the page's index
            info["labels"] = [str(label)[:16] for label in reader.page_labels[:len(pages)]]
        except Exception:
            info["labels"] = []
    return pages, info


def _sized_text(page: Any) -> tuple[str, list[tuple[str, float]]]:
    """A pypdf page's text, and its lines each with the largest type size set on it (the font
    size times the text and page matrices' scale, as printed), read in one pass: the sizes give
    sections to a PDF with neither an outline nor numbered headings, for about 5% more time."""
    lines: list[tuple[str, float]] = []
    line: list[str] = []
    largest = 0.0

    def visit(text: str, cm: Any, tm: Any, font: Any, font_size: Any) -> None:
        nonlocal line, largest
        for i, part in enumerate(str(text).split("\n")):
            if i:
                lines.append(("".join(line), largest))
                line, largest = [], 0.0
            line.append(part)
            if part.strip():
                try:
                    largest = max(largest, float(font_size or 0) * _scale(tm) * _scale(cm))
                except (TypeError, ValueError, IndexError):  # a malformed matrix: no size, the text stays
                    pass

    text = page.extract_text(visitor_text=visit) or ""
    return text, [*lines, ("".join(line), largest)]


def _scale(matrix: Any) -> float:
    """How much a PDF transformation matrix ``[a, b, c, d, e, f]`` enlarges what it draws."""
    return math.sqrt(abs(matrix[0] * matrix[3] - matrix[1] * matrix[2]))


def _pdfminer_pages(data: bytes, where: str) -> tuple[list[str], dict[str, Any]]:
    try:
        from pdfminer.high_level import extract_text
        from pdfminer.pdfdocument import PDFPasswordIncorrect
    except ImportError:
        raise InputError("engine 'pdfminer' needs the pdfminer.six package; run: pip install pdfminer.six",
                         path=where) from None
    with _quiet("pdfminer"):
        try:
            text = extract_text(io.BytesIO(data))
        except PDFPasswordIncorrect:
            raise InputError("encrypted PDF (it needs a password); save a copy without encryption and index that",
                             path=where) from None
        except Exception as exc:
            raise InputError(f"malformed PDF, pdfminer cannot read it: {_one_line(exc)}", path=where) from None
    pages = text.split("\f")
    if pages and not pages[-1].strip():
        pages.pop()  # the form feed after the last page
    return pages, {}


def _pages_summary(numbers: list[int]) -> str:
    """``"3, 5-7"`` from sorted page numbers."""
    runs: list[str] = []
    start = prev = numbers[0]
    for n in numbers[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(runs)


_DIGITS = re.compile(r"\d+")
# how a page's text ends when its last sentence does not run on to the next page
_SENTENCE_END = (".", "!", "?", ":")
_RUNNING_MIN_PAGES = 3


def _edges(lines: list[str]) -> list[int]:
    """The first and the last non-empty line of a page: where running heads and footers print."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted({filled[0], filled[-1]}) if filled else []


def _running_keys(line: str, page: int) -> list[tuple]:
    """What makes ``line`` the same running line on another page: its text, and for each number in
    it the text with numbers masked and that number's offset from the page index (a printed page
    number moves with the page: "Chapter 3: Utilities 7" on page 9, "… 8" on page 10)."""
    text = " ".join(line.split())
    masked = _DIGITS.sub("#", text)
    return [("text", text)] + [("numbered", masked, int(n) - page) for n in _DIGITS.findall(text)[:4]]


def strip_running_lines(pages: list[str]) -> list[str]:
    """Remove running heads and footers (a document's title, a chapter name, a page number, printed
    on every page) from the pages' text: indexed, they would be a sentence of every chunk and cut
    the sentences that run across pages in two.

    The first or last line of a page is running when the same line is the first or last line of
    at least three pages, or when it carries a number that moves with the page (a page number)
    and is otherwise the same on at least two. A page is never emptied: a page whose every line
    looks running (a slide with a title only) is kept whole.

    Example:
        >>> pages = ["Annual report\\nRoads were repaired.\\n1", "Annual report\\nSchools opened.\\n2",
        ...          "Annual report\\nTaxes fell.\\n3"]
        >>> strip_running_lines(pages)
        ['Roads were repaired.', 'Schools opened.', 'Taxes fell.']
    """
    if len(pages) < 2:
        return pages
    split = [page.splitlines() for page in pages]
    out = []
    for page, (lines, drop) in enumerate(zip(split, running_line_indexes(split))):
        kept = "\n".join(line for i, line in enumerate(lines) if i not in drop).strip()
        out.append(kept if kept else pages[page])
    return out


def running_line_indexes(pages: list[list[str]]) -> list[set[int]]:
    """For each page (its lines), the indexes of its running head and footer lines, as
    :func:`strip_running_lines` finds them (none when there are fewer than two pages)."""
    if len(pages) < 2:
        return [set() for _ in pages]
    counts: dict[tuple, int] = {}
    for page, lines in enumerate(pages):
        for key in {k for i in _edges(lines) for k in _running_keys(lines[i], page)}:
            counts[key] = counts.get(key, 0) + 1

    def running(line: str, page: int) -> bool:
        return any(counts.get(k, 0) >= (_RUNNING_MIN_PAGES if k[0] == "text" else 2)
                   for k in _running_keys(line, page))

    return [{i for i in _edges(lines) if running(lines[i], page)} for page, lines in enumerate(pages)]


# A word broken at a line end: letters, a hyphen (or a soft hyphen some writers extract), the line
# break, and the next line's first word. A hyphen after a space is a dash and stays.
_BROKEN = re.compile(r"\b([^\W\d_]+)([-\u00ad])[ \t]*\n[ \t]*(\w+)")
_WORD = re.compile(r"[^\W\d_]+")


def join_hyphenated(pages: list[str]) -> list[str]:
    """Join the lines of words a PDF broke at a line end, closed where the document shows the
    word is one: split, they are two words to the keyword search and to the reader.

    A typeset PDF breaks words between syllables ("infor-" / "mation"), and a PDF that does not
    hyphenate breaks compounds at their own hyphen ("little-" / "known"); nothing on the line
    tells them apart, and a wrong guess invents a word ("littleknown"). So the document decides:
    a word it writes closed elsewhere ("information") is joined closed; a soft hyphen always goes;
    any other break keeps its hyphen and loses only the line break ("little-known"), which is
    right for compounds and leaves a syllable break as readable as before.

    Pages are joined separately: a word broken across a page break keeps its break, so page
    offsets stay exact.

    Example:
        >>> join_hyphenated(["Roads need infor-\\nmation and little-\\nknown maps.", "All information is public."])
        ['Roads need information and little-known maps.', 'All information is public.']
    """
    # the document's words, the broken ones left out (their halves would vouch for themselves)
    words = {w.casefold() for page in pages for w in _WORD.findall(_BROKEN.sub(" ", page))}

    def join(m: re.Match) -> str:
        left, mark, right = m.groups()
        closed = left + right
        return closed if mark != "-" or closed.casefold() in words else f"{left}-{right}"

    return [_BROKEN.sub(join, page) for page in pages]


def page_separator(before: str, page: str) -> str:
    """What joins a page's text to the text before it: a blank line, a paragraph break to
    chunking and sentence splitting; a line break when a sentence runs on across the page break
    (``before`` ends without ``.``, ``!``, ``?`` or ``:`` and ``page`` starts with a lower-case
    letter), so that the sentence stays whole for chunking, selection and the reader.

    Example:
        >>> page_separator("to pick every fifth line starting with", "the tenth, use '10~5'")
        '\\n'
        >>> page_separator("It ends here.", "the next page"), page_separator("", "first page")
        ('\\n\\n', '\\n\\n')
    """
    runs_on = bool(before) and before.rstrip()[-1:] not in _SENTENCE_END and page[:1].islower()
    return "\n" if runs_on else "\n\n"


def running_head(pages: list[str]) -> str:
    """The line printed at the top of at least half the pages (three at least), numbers aside: in
    a document whose information dictionary has no title, usually its title ("" when none).

    Example:
        >>> running_head(["Shared MIME-info Database\\nText.", "Shared MIME-info Database\\nMore.",
        ...               "Shared MIME-info Database\\nEnd."])
        'Shared MIME-info Database'
    """
    counts: dict[str, int] = {}
    for page in pages:
        lines = page.splitlines()
        edges = _edges(lines)
        if edges:
            head = " ".join(lines[edges[0]].split())
            if _DIGITS.sub("", head).strip():
                counts[head] = counts.get(head, 0) + 1
    best = max(counts.items(), key=lambda kv: kv[1], default=("", 0))
    return best[0] if best[1] >= max(_RUNNING_MIN_PAGES, len(pages) / 2) else ""


def _place(page: int, headings: list[str], labels: list[str]) -> dict[str, Any]:
    place: dict[str, Any] = {"page": page}
    label = labels[page - 1] if page <= len(labels) else None
    if label and label != str(page):
        place["label"] = label
    if headings:
        place["headings"] = headings
    return place


def read_pdf(data: bytes, where: str, engine: str = "pypdf", bounds: FileBounds | None = None) -> Extracted:
    """The text of a PDF's pages, with each page's and each section's offset as ``{"page": n}`` /
    ``{"page": n, "headings": [...]}`` positions.

    Args:
        data: the file's bytes.
        where: the file as named in messages.
        engine: ``"pypdf"`` (default) or ``"pdfminer"`` (``pdfminer.six``; no metadata).
        bounds: what reading it may cost (:class:`ragnet.corpus.limits.FileBounds`; pypdf only).

    Returns:
        The text (pages joined by a blank line, or a line break mid-sentence), title,
        ``author``/``date``/``year`` metadata when declared and ``pages`` (the page count),
        page positions, and a note naming pages without text when some lack it.

    Raises:
        InputError: not a PDF, truncated, encrypted, unparsable, or no page has text.
    """
    if engine not in ENGINES:
        raise InputError(f"unknown PDF engine {engine!r}; choose one of {', '.join(ENGINES)}", argument="engine")
    _check_container(data, where)
    pages, info = _pypdf_pages(data, where, bounds) if engine == "pypdf" else _pdfminer_pages(data, where)
    if not pages:
        raise InputError("PDF has no pages", path=where)
    head = running_head(pages)
    pages = [TextBuilder.clean(page) for page in join_hyphenated(strip_running_lines(pages))]
    sections = info.get("outline") or numbered_headings(pages)
    sized = [] if sections else type_size_headings(info.get("type_sizes") or [])
    sections = sections or sized
    builder = TextBuilder()
    labels = info.get("labels") or []
    empty, before = [], ""
    for n, (page, marks) in enumerate(zip(pages, section_marks(pages, sections)), start=1):
        if builder.add(page, _place(n, marks[0][1], labels), separator=page_separator(before, page),
                       marks=tuple((at, _place(n, path, labels)) for at, path in marks[1:])):
            before = page
        else:
            empty.append(n)
    if len(empty) == len(pages):
        what = "its page has" if len(pages) == 1 else f"none of its {len(pages)} pages has"
        raise InputError(f"no text layer: {what} extractable text (a scan or images only?); run OCR first "
                         "(for example ocrmypdf) and index the result", path=where)
    notes = []
    if empty:
        which = f"page {empty[0]} has" if len(empty) == 1 else f"pages {_pages_summary(empty)} have"
        notes.append(f"{which} no text layer (scanned?) and {'was' if len(empty) == 1 else 'were'} left out; "
                     f"{len(pages) - len(empty)} of {len(pages)} pages read")
    metadata: dict[str, Any] = {}
    title = info.get("title")
    title = " ".join(title.split()) if isinstance(title, str) else ""
    title = title or head  # many PDF writers leave /Title empty; the running head names the document
    author = info.get("author")
    if isinstance(author, str) and author.strip():
        metadata["author"] = " ".join(author.split())
    metadata.update(date_metadata(info.get("created")))
    metadata["pages"] = len(pages)
    if sections:
        metadata["sections"] = "outline" if info.get("outline") else "type sizes" if sized else "numbered headings"
    return Extracted(text=builder.text(), title=title, metadata=metadata, positions=builder.positions(),
                     notes=notes)
