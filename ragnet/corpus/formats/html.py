"""HTML files: the main text without boilerplate, in blocks, with the heading path of each block.

Read with ``beautifulsoup4`` and the standard library's ``html.parser`` (the character set is
taken from the file's BOM or ``<meta charset>``, else guessed).

* **Boilerplate removed**: ``script``, ``style``, ``noscript``, ``template`` and other
  non-text elements; ``nav``, ``aside`` and ``footer``; a page-level ``header`` (one inside
  ``article``/``main``/``section`` is the article's own and is kept); anything with
  ``role="navigation"``, ``"banner"``, ``"contentinfo"``, ``"search"`` or ``"complementary"``, or
  the ``hidden`` attribute. Text the page hides from its reader by the element's own
  attributes is dropped too: ``aria-hidden="true"`` and an inline ``style`` with
  ``display: none``, ``visibility: hidden``, ``font-size: 0`` or ``opacity: 0`` (:func:`hidden`;
  rules in style sheets are not read, see docs/design.md). When the page has a ``<main>`` (or ``role="main"``), only it is read;
  else its ``<article>`` elements when it has some; else the ``<body>``.
* **Blocks**: paragraphs, headings, list items, table rows (cells joined by ``" | "``),
  ``pre`` (line breaks kept), ``blockquote``... Each block is one paragraph of the text;
  consecutive list items and table rows are lines of one paragraph.
* **Heading path**: ``h1``..``h6`` nest; each block's ``positions`` entry holds the headings
  in force, outermost first (a heading belongs to its own section).
* **Metadata**: title from ``<title>``, else the first ``h1``; ``date`` from
  ``<meta name="date">``, ``name="dcterms.date"``, ``property="article:published_time"`` or the
  first ``<time datetime>``; ``author`` from ``<meta name="author">``.

A page with no text left after the boilerplate is removed is refused, and so is one with more
elements than ``--max-file-mb`` allows (:mod:`ragnet.corpus.limits`). The tree is walked with an
explicit stack, so a page of 100,000 nested (or unclosed) elements reads like any other.

Example:
    >>> page = b'''<html><head><title>Report</title><meta name="date" content="2019-05-01"></head>
    ... <body><header><a href="/">Home</a></header><main><h1>Report</h1><h2>Scope</h2>
    ... <p>It covers   two regions.</p><ul><li>North</li><li>South</li></ul></main>
    ... <footer>(c) Agency</footer></body></html>'''
    >>> got = read_html(page, "report.html")
    >>> print(got.text)
    Report
    <BLANKLINE>
    Scope
    <BLANKLINE>
    It covers two regions.
    <BLANKLINE>
    North
    South
    >>> got.positions[-1], got.metadata
    ((8, {'headings': ['Report', 'Scope']}), {'date': '2019-05-01'})
"""

from __future__ import annotations

import re
from typing import Any

from ragnet.corpus.formats import Extracted, TextBuilder, date_metadata, require_reader
from ragnet.corpus.limits import FileBounds, cap_title
from ragnet.errors import InputError

__all__ = ["hidden", "read_html"]

_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
              "nav", "aside", "footer", "head", "title", "meta", "link", "base", "button", "select", "dialog")
_DROP_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary"}
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = {"p", "div", "section", "article", "main", "blockquote", "pre", "figure", "figcaption", "caption",
           "dl", "dt", "dd", "address", "details", "summary", "form", "fieldset", "legend", "table", "thead",
           "tbody", "tfoot", "ul", "ol", "li", "tr", "hr", "body", "html", "center", "header"}
_LINES = {"li", "tr", "dt", "dd"}  # consecutive ones are lines of one paragraph
_DATE_META = (("name", "date"), ("name", "dcterms.date"), ("name", "DC.date"), ("property", "article:published_time"),
              ("itemprop", "datePublished"))
_WS = re.compile(r"\s+")
# a heading's permalink mark ("Timers #", "Install ¶"): part of the page's chrome, not of its title
_PERMALINK = re.compile(r"\s*[#¶§🔗]$")
_BR = "\x00"  # a <br> among inline text (NUL never survives the parser)


def _decoded(data: bytes, where: str) -> Any:
    bs4 = require_reader("html", where)
    try:
        return bs4.BeautifulSoup(data, "html.parser")
    except Exception as exc:  # html.parser is lenient; this is a last resort
        raise InputError(f"malformed HTML: {' '.join(str(exc).split())[:160]}", path=where) from None


_HIDDEN_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)"
    r"|(?:font-size|opacity)\s*:\s*[-+]?0*\.?0*(?:[a-z]+|%)?)\s*(?:!\s*important\s*)?(?:;|$)", re.I)
# elements whose presence inside a list item makes it a container of blocks rather than one line
_BLOCK_INSIDE = frozenset(("p", "div", "ul", "ol", "table", "pre", "blockquote", *_HEADINGS))
_SECTIONING = frozenset(("article", "main", "section"))


def hidden(tag: Any) -> bool:
    """Whether an element is hidden from the reader of the page by its own attributes: ``hidden``,
    ``aria-hidden="true"``, or an inline style with ``display: none``, ``visibility: hidden``
    (or ``collapse``), ``font-size: 0`` or ``opacity: 0``. Stylesheet rules are not read.

    Example:
        >>> from bs4 import BeautifulSoup
        >>> [hidden(t) for t in BeautifulSoup('<p style="color:red; DISPLAY: none !important">a</p>'
        ...  '<p style="font-size:0px">b</p><p aria-hidden="true">c</p><p style="font-size:10px">d</p>',
        ...  "html.parser").find_all("p")]
        [True, True, True, False]
    """
    attrs = tag.attrs
    if "hidden" in attrs:
        return True
    aria = attrs.get("aria-hidden")
    if isinstance(aria, str) and aria.strip().lower() == "true":
        return True
    style = attrs.get("style")
    return isinstance(style, str) and _HIDDEN_STYLE.search(style) is not None


class _Survey:
    """One walk over the whole tree (iterative: nesting depth costs no stack) finding what the
    reader needs: the metadata tags, the boilerplate and hidden elements to drop, the content
    roots, and which elements hold a block (a list item holding a paragraph is read as blocks)."""

    def __init__(self, soup: Any) -> None:
        from bs4 import Tag

        self.title: Any = None
        self.h1: Any = None
        self.time: Any = None
        self.metas: list[Any] = []
        self.drop: list[Any] = []
        self.main: Any = None
        self.role_main: Any = None
        self.articles: list[Any] = []
        self.holders: set[int] = set()
        # (children left, dropped, inside article/main/section, inside an article) per open element
        path: list[Any] = []
        stack: list[tuple[Any, bool, bool, bool]] = [(iter(soup.children), False, False, False)]
        while stack:
            children, dropped, sectioned, in_article = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                if path:
                    path.pop()
                continue
            if not isinstance(child, Tag):
                continue
            name = (child.name or "").lower()
            self._metadata(child, name)
            drop = not dropped and self._boilerplate(child, name, sectioned)
            if drop:
                self.drop.append(child)
            gone = dropped or drop
            if not gone:
                role = child.get("role")
                if name == "main" and self.main is None:
                    self.main = child
                elif isinstance(role, str) and role.strip().lower() == "main" and self.role_main is None:
                    self.role_main = child
                if name == "article" and not in_article:
                    self.articles.append(child)
                if name in _BLOCK_INSIDE:
                    for holder in reversed(path):  # every open element holds a block now
                        if id(holder) in self.holders:
                            break
                        self.holders.add(id(holder))
            path.append(child)
            stack.append((iter(child.children), gone, sectioned or name in _SECTIONING,
                          in_article or name == "article"))

    def _metadata(self, tag: Any, name: str) -> None:
        if name == "title" and self.title is None:
            self.title = tag
        elif name == "h1" and self.h1 is None:
            self.h1 = tag
        elif name == "meta":
            self.metas.append(tag)
        elif name == "time" and self.time is None and tag.get("datetime") is not None:
            self.time = tag

    @staticmethod
    def _boilerplate(tag: Any, name: str, sectioned: bool) -> bool:
        if name in _DROP_TAGS or hidden(tag):
            return True
        role = tag.get("role")
        if isinstance(role, str) and set(role.lower().split()) & _DROP_ROLES:
            return True
        return name == "header" and not sectioned  # a page-level header; an article's own is kept

    def meta_content(self, attr: str, value: str) -> str | None:
        for tag in self.metas:
            found = tag.get(attr)
            if isinstance(found, str) and found.lower() == value.lower():
                content = tag.get("content")
                return content.strip() if isinstance(content, str) and content.strip() else None
        return None

    def roots(self, soup: Any) -> list[Any]:
        main = self.main if self.main is not None else self.role_main
        if main is not None:
            return [main]
        if self.articles:
            return self.articles
        body = soup.find("body")
        return [body if body is not None and not body.decomposed else soup]


def _metadata(survey: _Survey) -> tuple[str, dict[str, Any]]:
    title = _WS.sub(" ", survey.title.get_text()).strip() if survey.title is not None else ""
    if not title and survey.h1 is not None:
        title = _WS.sub(" ", survey.h1.get_text()).strip()
    meta: dict[str, Any] = {}
    author = survey.meta_content("name", "author")
    if author:
        meta["author"] = author
    for attr, value in _DATE_META:
        found = date_metadata(survey.meta_content(attr, value))
        if found:
            meta.update(found)
            break
    else:
        if survey.time is not None:
            meta.update(date_metadata(survey.time.get("datetime")))
    return title, meta


class _Walker:
    """Walks the content in document order, emitting blocks with their heading path."""

    def __init__(self, holders: set[int]) -> None:
        self.builder = TextBuilder()
        self.headings: list[tuple[int, str]] = []
        self.inline: list[str] = []
        self.last_kind = ""
        self.holders = holders

    def place(self) -> dict[str, Any] | None:
        return {"headings": [text for _, text in self.headings]} if self.headings else {}

    def emit(self, text: str, kind: str) -> None:
        separator = "\n" if kind in _LINES and self.last_kind in _LINES else "\n\n"
        if self.builder.add(text, self.place(), separator=separator):
            self.last_kind = kind

    def inline_text(self) -> str:
        """The inline text gathered since the last block, whitespace collapsed, ``<br>`` kept."""
        text = "\n".join(_WS.sub(" ", part).strip() for part in "".join(self.inline).split(_BR))
        self.inline = []
        return text.strip()

    def flush(self) -> None:
        self.flush_as("p")

    def walk(self, root: Any) -> None:
        """Read ``root``'s content; an explicit stack, not recursion, so that 100,000 nested
        elements cost memory, not the interpreter's stack."""
        from bs4 import NavigableString, Tag
        from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

        stack: list[tuple[Any, Any]] = [(iter(root.children), None)]  # (children left, what to do after them)
        while stack:
            children, after = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                if after is not None:
                    after()
                continue
            if isinstance(child, (Comment, Declaration, Doctype, ProcessingInstruction)):
                continue
            if isinstance(child, NavigableString):
                self.inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name.lower()
            if name == "br":
                self.inline.append(_BR)
            elif name in _HEADINGS:
                self.flush()
                level = _HEADINGS[name]
                text = _PERMALINK.sub("", _WS.sub(" ", child.get_text(" ")).strip())
                if text:
                    while self.headings and self.headings[-1][0] >= level:
                        self.headings.pop()
                    self.headings.append((level, cap_title(text)))
                    self.emit(text, "h")
            elif name == "pre":
                self.flush()
                self.emit(child.get_text(), "pre")
            elif name == "tr":
                self.flush()
                cells = [_WS.sub(" ", c.get_text(" ")).strip() for c in child.find_all(("td", "th"), recursive=False)]
                self.emit(" | ".join(c for c in cells if c), "tr")
            elif name in ("li", "dt", "dd"):
                self.flush()
                if id(child) not in self.holders:
                    self.emit(_WS.sub(" ", child.get_text(" ")).strip(), name)
                else:  # a list item holding blocks: its own text, then its blocks
                    stack.append((iter(child.children), lambda kind=name: self.flush_as(kind)))
            elif name in _BLOCKS:
                self.flush()
                stack.append((iter(child.children), self.flush))
            else:  # inline: a, span, em, strong, code, ...
                stack.append((iter(child.children), None))

    def flush_as(self, kind: str) -> None:
        text = self.inline_text()
        if text:
            self.emit(text, kind)


def read_html(data: bytes, where: str, bounds: FileBounds | None = None) -> Extracted:
    """The main text of an HTML page, with heading-path positions, title and date.

    Args:
        data: the file's bytes.
        where: the file as named in messages.
        bounds: what reading it may cost (default: :class:`ragnet.corpus.limits.FileBounds`'s).

    Raises:
        InputError: no text is left once the boilerplate is removed, the page has more elements
            than ``bounds`` allows, or ``beautifulsoup4`` is missing.
    """
    (bounds if bounds is not None else FileBounds()).check_html(data, where)
    soup = _decoded(data, where)
    survey = _Survey(soup)
    title, meta = _metadata(survey)
    for tag in survey.drop:
        if not tag.decomposed:
            tag.decompose()
    walker = _Walker(survey.holders)
    for root in survey.roots(soup):
        walker.walk(root)
        walker.flush()
        walker.last_kind = ""
    text = walker.builder.text()
    if not text.strip():
        raise InputError("no text in this HTML page (navigation, scripts and other boilerplate are not indexed)",
                         path=where)
    positions = tuple((offset, place) for offset, place in walker.builder.positions() if place)
    return Extracted(text=text, title=title, metadata=meta, positions=positions)
