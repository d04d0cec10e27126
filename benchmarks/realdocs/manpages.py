"""Man pages rendered to text (``man``) and written as Markdown: ``## NAME``, ``## OPTIONS``...

The page is rendered 80 columns wide; its section headings (column 0) become ``##`` headings and
its subsection headings (column 3) ``###`` ones; an option's tag (``-A, --catenate``) becomes a
line in backticks followed by its description; filled paragraphs are reflowed (the renderer's
hyphenation breaks joined, its justification spaces collapsed); anything else (a synopsis, an
example) is kept as an indented code block.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from benchmarks.realdocs.info import _indent, _runs  # the same plain-text layout reading

__all__ = ["render_man", "man_source", "man_to_markdown", "man_version"]

_GAP = re.compile(r"^(\s*)(\S.*?)(\s{2,})(\S.*)$")
_VERBATIM = ("SYNOPSIS", "NAME")


def man_source(name: str) -> Path:
    """The man page's source file (``man -w NAME``)."""
    out = subprocess.run(["man", "-w", name], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[0])


def man_version() -> str:
    """``man --version``'s first line (the renderer's version is part of the output's layout)."""
    out = subprocess.run(["man", "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[0]


def render_man(name: str) -> str:
    """The man page as plain text, 80 columns wide (no bold or underline)."""
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    out = subprocess.run(["man", "-E", "UTF-8", "-P", "cat", name], capture_output=True, env=env, check=True)
    text = out.stdout.decode("utf-8")
    return re.sub(r".\x08", "", text)  # overstrikes, should a pager setting leave some


def _reflow(lines: list[str]) -> str:
    """Filled lines as one paragraph: hyphenation breaks (U+2010 at a line end) joined."""
    out = ""
    for line in lines:
        text = " ".join(line.split())
        if out.endswith("\u2010"):
            out = out[:-1] + text
        else:
            out = f"{out} {text}" if out else text
    return out


def _is_code(lines: list[str]) -> bool:
    stripped = [line.strip() for line in lines]
    if stripped[-1].endswith((".", ":", ";", ")")) and len(stripped[-1].split()) > 2:
        return False
    return all(len(line) < 60 for line in stripped) and not any(line.endswith(".") for line in stripped)


def _paragraph(lines: list[str]) -> list[str]:
    """Markdown lines for one paragraph of the rendered page (below a heading)."""
    out: list[str] = []
    runs = _runs(lines)
    for k, run in enumerate(runs):
        deeper = _indent(runs[k + 1][0]) if k + 1 < len(runs) and _indent(runs[k + 1][0]) > _indent(run[0]) \
            else None
        m = _GAP.match(run[0])
        at = len(m.group(1)) + len(m.group(2)) + len(m.group(3)) if m else 0
        if m and len(run) == 1 and len(m.group(2)) < 12 and not m.group(2).endswith((".", ",")) \
                and deeper in (None, at):
            out.append(f"`{m.group(2)}`")
            rest = [m.group(4)] + run[1:]
            out.append(_reflow(rest))
            continue
        if len(run) == 1 and deeper is not None:
            out.append(f"`{run[0].strip()}`")
            continue
        if _is_code(run):
            base = min(_indent(line) for line in run)
            out.extend(["", *("    " + line[base:] for line in run), ""])
        else:
            out.append(_reflow(run))
    return out


def man_to_markdown(text: str) -> str:
    """A rendered man page as Markdown.

    Args:
        text: ``man``'s plain-text output.

    Returns:
        Markdown with a ``#`` title (the NAME line), ``##`` sections and ``###`` subsections.
    """
    lines = [line.rstrip() for line in text.splitlines()]
    filled = [i for i, line in enumerate(lines) if line.strip()]
    lines = lines[filled[0] + 1:filled[-1]]  # the page's header and footer lines
    body = min((_indent(line) for line in lines if line.strip() and _indent(line) > 3), default=7)
    out: list[str] = []
    paragraph: list[str] = []
    section = ""

    def flush() -> None:
        if paragraph and section in _VERBATIM:
            base = min(_indent(line) for line in paragraph)
            out.extend(["    " + line[base:] for line in paragraph] + [""])
        elif paragraph:
            out.extend(_paragraph(paragraph) + [""])
        paragraph.clear()

    previous = ""
    for line in lines:
        level = _indent(line)
        if line.strip() and level == 0:
            flush()
            section = line.strip()
            out.extend([f"## {section}", ""])
        elif line.strip() and level < body and not previous.strip().endswith(","):
            flush()
            out.extend([f"### {line.strip()}", ""])
        elif line.strip():
            paragraph.append(line)
        else:
            flush()
        previous = line
    flush()
    names = [line.strip() for line in out[out.index("## NAME") + 1:] if line.strip()] if "## NAME" in out else []
    title = f"# {names[0]}" if names else "# Manual page"
    markdown = "\n".join([title, "", *out])
    return re.sub(r"\n{3,}", "\n\n", markdown).strip() + "\n"
