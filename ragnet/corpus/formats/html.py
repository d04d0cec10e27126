"""HTML files: the main text without boilerplate, in blocks, with the heading path of each block.

Read with ``beautifulsoup4`` and the standard library's ``html.parser`` (the character set is
taken from the file's BOM or ``<meta charset>``, else guessed).

* **Boilerplate removed**: ``script``, ``style``, ``noscript``, ``template`` and other
  non-text elements; ``nav``, ``aside`` and ``footer``; a page-level ``header`` (one inside
  ``article``/``main``/``section`` is the article's own and is kept); anything with
  ``role="navigation"``, ``"banner"``, ``"contentinfo"``, ``"search"`` or ``"complementary"``, or
  the ``hidden`` attribute. When the page has a ``<main>`` (or ``role="main"``), only it is read;
  else its ``<article>`` elements when it has some; else the ``<body>``.
* **Blocks**: paragraphs, headings, list items, table rows (cells joined by ``" | "``),
  ``pre`` (line breaks kept), ``blockquote``... Each block is one paragraph of the text;
  consecutive list items and table rows are lines of one paragraph.
* **Heading path**: ``h1``..``h6`` nest; each block's ``positions`` entry holds the headings
  in force, outermost first (a heading belongs to its own section).
* **Metadata**: title from ``<title>``, else the first ``h1``; ``date`` from
  ``<meta name="date">``, ``name="dcterms.date"``, ``property="article:published_time"`` or the
  first ``<time datetime>``; ``author`` from ``<meta name="author">``.

A page with no text left after the boilerplate is removed is refused.

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
from ragnet.errors import InputError

__all__ = ["read_html"]

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


def _meta_content(soup: Any, attr: str, value: str) -> str | None:
    tag = soup.find("meta", attrs={attr: re.compile(f"^{re.escape(value)}$", re.I)})
    content = tag.get("content") if tag is not None else None
    return content.strip() if isinstance(content, str) and content.strip() else None


def _metadata(soup: Any) -> tuple[str, dict[str, Any]]:
    title_tag = soup.find("title")
    title = _WS.sub(" ", title_tag.get_text()).strip() if title_tag is not None else ""
    if not title:
        h1 = soup.find("h1")
        title = _WS.sub(" ", h1.get_text()).strip() if h1 is not None else ""
    meta: dict[str, Any] = {}
    author = _meta_content(soup, "name", "author")
    if author:
        meta["author"] = author
    for attr, value in _DATE_META:
        found = date_metadata(_meta_content(soup, attr, value))
        if found:
            meta.update(found)
            break
    else:
        time_tag = soup.find("time", attrs={"datetime": True})
        if time_tag is not None:
            meta.update(date_metadata(time_tag.get("datetime")))
    return title, meta


def _strip_boilerplate(soup: Any) -> None:
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for tag in soup.find_all(attrs={"role": True}):
        if tag.decomposed:
            continue
        role = tag.get("role")
        roles = set(role.lower().split()) if isinstance(role, str) else set()
        if roles & _DROP_ROLES:
            tag.decompose()
    for tag in soup.find_all(attrs={"hidden": True}):
        if not tag.decomposed:
            tag.decompose()
    for tag in soup.find_all("header"):
        if tag.decomposed:
            continue
        if tag.find_parent(("article", "main", "section")) is None:
            tag.decompose()


def _content_roots(soup: Any) -> list[Any]:
    main = soup.find("main") or soup.find(attrs={"role": "main"})
    if main is not None:
        return [main]
    articles = [a for a in soup.find_all("article") if a.find_parent("article") is None]
    if articles:
        return articles
    body = soup.find("body")
    return [body if body is not None else soup]


class _Walker:
    """Walks the content in document order, emitting blocks with their heading path."""

    def __init__(self) -> None:
        self.builder = TextBuilder()
        self.headings: list[tuple[int, str]] = []
        self.inline: list[str] = []
        self.last_kind = ""

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

    def walk(self, node: Any) -> None:
        from bs4 import NavigableString, Tag
        from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

        for child in node.children:
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
                    self.headings.append((level, text))
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
                if child.find(("p", "div", "ul", "ol", "table", "pre", "blockquote", *_HEADINGS)) is None:
                    self.emit(_WS.sub(" ", child.get_text(" ")).strip(), name)
                else:  # a list item holding blocks: its own text, then its blocks
                    self.walk(child)
                    self.flush_as(name)
            elif name in _BLOCKS:
                self.flush()
                self.walk(child)
                self.flush()
            else:  # inline: a, span, em, strong, code, ...
                self.walk(child)

    def flush_as(self, kind: str) -> None:
        text = self.inline_text()
        if text:
            self.emit(text, kind)


def read_html(data: bytes, where: str) -> Extracted:
    """The main text of an HTML page, with heading-path positions, title and date.

    Raises:
        InputError: no text is left once the boilerplate is removed, or ``beautifulsoup4`` is
            missing.
    """
    soup = _decoded(data, where)
    title, meta = _metadata(soup)
    _strip_boilerplate(soup)
    walker = _Walker()
    for root in _content_roots(soup):
        walker.walk(root)
        walker.flush()
        walker.last_kind = ""
    text = walker.builder.text()
    if not text.strip():
        raise InputError("no text in this HTML page (navigation, scripts and other boilerplate are not indexed)",
                         path=where)
    positions = tuple((offset, place) for offset, place in walker.builder.positions() if place)
    return Extracted(text=text, title=title, metadata=meta, positions=positions)
