"""GNU info manuals (``.info.gz``) parsed into sections of typed blocks, for the PDF and DOCX writers.

An info file is a sequence of nodes separated by ``\\x1f``; each node starts with a header line
(``File: sed.info,  Node: Overview,  Next: ...,  Up: ...``) and its title, underlined with
``*`` (chapter), ``=`` (section), ``-`` (subsection) or ``.`` (subsubsection). A node may hold
further underlined headings. The tag table at the end gives each node's and anchor's byte offset,
which resolves cross-references to anchors.

This module turns a manual into a list of :class:`Section` (a heading, its level, its node and
its blocks) with the menus, the indexes and the licence left out, and rewrites info
cross-references (``*note Node::``) the way a printed manual writes them ("see Section 2.3
[Node], page 7"), the page coming from a layout pass of the writer.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

__all__ = ["Block", "Section", "Manual", "read_manual", "resolve_xrefs", "source_files"]

_UNDERLINE_LEVEL = {"*": 0, "=": 1, "-": 2, ".": 3}
_UNDERLINE = re.compile(r"^([*=.-])\1+$")
_HEADER = re.compile(r"^File: [^,]+,\s+Node: ([^,\n]+)")
_TAG = re.compile(r"^(Node|Ref): (.+)\x7f(\d+)$")
# nodes a printed team copy leaves out: indexes, the licence, the copying chapter
_SKIP_NODE = re.compile(r"(?i)index$|licen[cs]e|^copying( this manual)?$")
_NUMBER = re.compile(r"^((?:Appendix )?[A-Z0-9]+(?:\.\d+)*)\s+\S")
_MARKER = re.compile(r"^(?:•|\*|-|\d+\.|[a-z]\.)\s+\S")
# one info cross-reference: "*note Node::" or "*note Label: Node." (or ","), maybe "(manual)Node"
XREF = re.compile(r"\*([Nn])ote\s+([^:]+?)(?:::|:\s+(\([^)\s]*\))?\s*([^.,:]+?)([.,]))", re.S)


@dataclass
class Block:
    """One paragraph-level piece of a section.

    Attributes:
        kind: ``"prose"`` (text to reflow), ``"item"`` (a list item, reflowed after its marker),
            ``"label"`` (a table item's term, e.g. an option), ``"pre"`` (lines kept as they are).
        text: the reflowed text (prose, item, label) or the lines joined by ``\\n`` (pre).
        indent: the info indentation in columns (0 for body text, 5 for table descriptions).
    """

    kind: str
    text: str
    indent: int = 0


@dataclass
class Section:
    """A heading and the blocks up to the next heading."""

    title: str
    level: int  # 0 chapter, 1 section, 2 subsection, 3 subsubsection
    node: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def number(self) -> Optional[str]:
        """The heading's number ("2.3", "Appendix A"), or None for an unnumbered heading."""
        m = _NUMBER.match(self.title)
        if not m:
            return None
        number = m.group(1)
        return number if number.startswith("Appendix") or any(ch.isdigit() for ch in number) else None


@dataclass
class Manual:
    """A parsed info manual.

    Attributes:
        name: the info file's stem (``sed``).
        title: the Top node's title (``GNU sed``).
        front: the Top node's blocks (version and copyright lines), for a title page.
        sections: the manual's sections in reading order.
        anchors: node or anchor name -> the node holding it (cross-reference targets).
        numbers: node name -> the number of its first heading (None: unnumbered).
    """

    name: str
    title: str
    front: list[Block]
    sections: list[Section]
    anchors: dict[str, str]
    numbers: dict[str, Optional[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for section in self.sections:
            self.numbers.setdefault(section.node, section.number)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _join(lines: list[str]) -> str:
    return " ".join(" ".join(line.split()) for line in lines)


def _prose_like(lines: list[str]) -> bool:
    """Whether indented lines are a filled paragraph (a table item's description), not code."""
    indents = {_indent(line) for line in lines}
    if len(indents) != 1 or any(re.search(r"\S {3,}\S", line.strip()) for line in lines):
        return False
    stripped = [line.strip() for line in lines]
    words = " ".join(stripped).split()
    if len(stripped) == 1:
        return len(words) >= 3 and stripped[0][0].isupper() and stripped[0][-1] in ".:"
    ends = stripped[-1][-1] in ".:)" and len(words) >= 6
    return ends or all(len(line) >= 45 for line in stripped[:-1])


def _blocks(lines: list[str]) -> list[Block]:
    """Classify one paragraph (consecutive non-blank lines) into blocks."""
    indents = [_indent(line) for line in lines]
    items = _items(lines)
    if items is not None:
        return items
    if indents[0] <= 3 and all(i == 0 for i in indents[1:]):
        return [Block("prose", _join(lines), 0)]
    if indents[0] < 5 and any(i >= 5 for i in indents):
        cut = next(k for k, i in enumerate(indents) if i >= 5)
        terms = cut
        while terms > 0 and _term_like(lines[terms - 1]):
            terms -= 1
        lead = _blocks(lines[:terms]) if terms else []
        labels = [Block("label", line.strip(), indents[0]) for line in lines[terms:cut]]
        return lead + labels + _blocks(lines[cut:])
    runs = _runs(lines)
    if len(runs) > 1 and any(_prose_like(run) for run in runs):  # a nested table: terms deeper
        out: list[Block] = []
        for k, run in enumerate(runs):
            deeper = k + 1 < len(runs) and _indent(runs[k + 1][0]) > _indent(run[0])
            cut = len(run)
            while deeper and cut > 0 and _term_like(run[cut - 1]):
                cut -= 1
            if cut:
                out.extend(_blocks(run[:cut]))
            out.extend(Block("label", line.strip(), _indent(line)) for line in run[cut:])
        return out
    if _prose_like(lines):
        return [Block("prose", _join(lines), indents[0])]
    base = min(indents)
    return [Block("pre", "\n".join(line[base:].rstrip() for line in lines), base)]


def _items(lines: list[str]) -> Optional[list[Block]]:
    """A paragraph that is a list (``1.``, ``•``), maybe after a lead-in line, as blocks; None when
    it is not one: every line after the first item must start an item at the same indentation or
    continue one, indented deeper."""
    first = next((k for k, line in enumerate(lines) if _MARKER.match(line.strip())), None)
    if first is None:
        return None
    level = _indent(lines[first])
    items: list[list[str]] = []
    for line in lines[first:]:
        if _MARKER.match(line.strip()) and _indent(line) == level:
            items.append([line])
        elif _indent(line) > level:
            items[-1].append(line)
        else:
            return None
    lead = _blocks(lines[:first]) if first else []
    return lead + [Block("item", _join(item), level) for item in items]


def _term_like(line: str) -> bool:
    """Whether a line is a table item's term (``‘-n’``, ``0``), not a sentence."""
    text = line.strip()
    return text.startswith("\u2018") or (len(text) <= 25 and not text.endswith((".", ":", ",")))


def _runs(lines: list[str]) -> list[list[str]]:
    """Consecutive lines of equal indentation."""
    runs: list[list[str]] = []
    for line in lines:
        if runs and _indent(runs[-1][-1]) == _indent(line):
            runs[-1].append(line)
        else:
            runs.append([line])
    return runs


def _paragraphs(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    current: list[str] = []
    for line in lines + [""]:
        if line.strip():
            current.append(line.rstrip())
        elif current:
            out.append(current)
            current = []
    return out


def _strip_menu(lines: list[str]) -> list[str]:
    for i, line in enumerate(lines):
        if line.startswith("* Menu:"):
            return lines[:i]
    return lines


def _split_headings(lines: list[str]) -> list[tuple[str, int, list[str]]]:
    """``(title, level, body lines)`` for each underlined heading of a node's lines."""
    out: list[tuple[str, int, list[str]]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        under = lines[i + 1] if i + 1 < len(lines) else ""
        m = _UNDERLINE.match(under)
        if line.strip() and m and abs(len(under) - len(line)) <= 2 and _indent(line) == 0:
            out.append((line.strip(), _UNDERLINE_LEVEL[m.group(1)], []))
            i += 2
            continue
        if out:
            out[-1][2].append(line)
        i += 1
    return out


def _nodes(text: str) -> list[tuple[str, list[str]]]:
    out = []
    for part in text.split("\x1f"):
        lines = part.lstrip("\n").split("\n")
        m = _HEADER.match(lines[0]) if lines else None
        if m:
            out.append((m.group(1).strip(), lines[1:]))
    return out


def _anchors(text: str) -> dict[str, str]:
    """Node and anchor names -> the node holding them, from the tag table's byte offsets."""
    table = text.split("Tag Table:", 1)[-1] if "Tag Table:" in text else ""
    tags = [(kind, name, int(offset)) for kind, name, offset in
            (m.groups() for m in map(_TAG.match, table.splitlines()) if m)]
    nodes = sorted((offset, name) for kind, name, offset in tags if kind == "Node")
    out = {name: name for _, name in nodes}
    for kind, name, offset in tags:
        if kind == "Ref":
            holder = [n for o, n in nodes if o <= offset]
            if holder:
                out[name] = holder[-1]
    return out


def _read(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")


def _part(path: Path, name: str) -> Path:
    """The file of a split manual's part (``find.info-1``), compressed like the main file."""
    return path.with_name(name + (".gz" if path.suffix == ".gz" else ""))


def source_files(path: Path) -> list[Path]:
    """The files a manual is read from: the main file and, for a split manual, its parts."""
    text = _read(path)
    if "\x1f\nIndirect:" not in text:
        return [path]
    listing = text.split("\x1f\nIndirect:", 1)[1].split("\x1f", 1)[0]
    return [path] + [_part(path, line.split(":")[0].strip()) for line in listing.strip().splitlines()]


def read_manual(path: Path) -> Manual:
    """Parse a (gzipped) info manual.

    Args:
        path: the ``.info.gz`` (or ``.info``) file; the parts of a split manual
            (``find.info-1.gz``...) are read from beside it.

    Returns:
        The manual with its indexes, licence and menus left out.
    """
    text = "".join(_read(part) for part in source_files(path))
    sections: list[Section] = []
    title, front = path.name.split(".")[0], []
    for node, lines in _nodes(text):
        parts = _split_headings(_strip_menu(lines))
        if node == "Top":
            if parts:
                title = parts[0][0]
                front = [b for para in _paragraphs(parts[0][2]) for b in _blocks(para)]
            continue
        if _SKIP_NODE.search(node):
            continue
        for heading, level, body in parts:
            blocks = [b for para in _paragraphs(body) for b in _blocks(para)]
            sections.append(Section(heading, level, node, blocks))
    return Manual(path.name.split(".")[0], title, front, sections, _anchors(text))


def resolve_xrefs(text: str, manual: Manual, page_of: Callable[[str], Optional[int]]) -> str:
    """Rewrite info cross-references as a printed manual writes them.

    ``*Note X::`` (an ``@xref``) becomes "See Section 2.3 [X], page 7"; ``(*note X::)`` (an
    ``@pxref``) "(see Section 2.3 [X], page 7)"; any other ``*note X::`` (an ``@ref``)
    "Section 2.3 [X], page 7". The section number is the target node's; the page, when
    ``page_of`` knows it, the page where that node starts. A reference to another manual
    becomes "see "X" in the NAME manual".

    Args:
        text: a block's text.
        manual: the manual, for its node numbers and anchors.
        page_of: node name -> page number, or None (no pages: DOCX, or a first layout pass).
    """
    numbers = manual.numbers

    def replace(m: re.Match) -> str:
        capital, label, external, target, punct = m.groups()
        label = " ".join(label.split())
        target = " ".join((target or label).split())
        lead = "See " if capital == "N" else ("see " if text[:m.start()].rstrip().endswith("(") else "")
        if external or target.startswith("("):
            where = (external or target[: target.find(")") + 1]).strip("()")
            return f"{lead}\u201c{label}\u201d in the {where} manual{punct or ''}"
        node = manual.anchors.get(target, target)
        number = numbers.get(node)
        page = page_of(node)
        ref = f"Section {number} [{label}]" if number else f"[{label}]"
        return f"{lead}{ref}{f', page {page}' if page else ''}{punct or ''}"

    return XREF.sub(replace, text)
