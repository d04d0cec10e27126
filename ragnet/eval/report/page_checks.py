"""What ``ragnet eval report`` reads and writes besides the rows, checked first (issue 47, items 8 and 9).

Reading: a run folder's ``summary.json`` comes from a file anyone can edit or copy half of.
The fields the page reads are checked for their type (:func:`check_summary`; the rows are
checked as they are read, :func:`ragnet.eval.run.results_file.check_row`): a malformed one is
an :class:`~ragnet.errors.InputError` naming the file and the field, never a ``KeyError`` or
``TypeError`` from deep inside the rendering.

Writing: the page goes only where ``ragnet eval`` itself may write (:func:`check_page_target`):
a path that does not exist yet, the ``report.html`` of a folder ``ragnet eval`` marked as its
own, or a page ``ragnet eval report`` wrote before (it carries :data:`GENERATOR`). Anything else
(a run's ``summary.json``, a user's ``mine.html``, a folder, the ``report.html`` of a folder
someone copied a run into) is refused in one line and left as it was.

Example:
    >>> check_summary({"meta": {"strategies": [{"label": "basic"}], "set": 3}}, "summary.json")
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: summary.json: not a ragnet eval summary: 'meta' 'set' must be a string, got a number; run the eval again (it writes report.html itself)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragnet.errors import InputError
from ragnet.eval.run.results_file import kind_of

__all__ = ["GENERATOR", "check_page_target", "check_summary"]

#: The ``<meta name="generator">`` every page ``ragnet eval`` writes carries.
GENERATOR = "ragnet eval report"
_SIGNATURES = (f'<meta name="generator" content="{GENERATOR}">'.encode(), b"<title>ragnet eval: ")
_SCALAR = (str, int, float)


def check_summary(summary: Any, where: str | Path) -> None:
    """Refuse a ``summary.json`` the report cannot be built from: no ``meta`` object, or a
    ``meta.strategies`` that is not a list of objects with a ``label``.

    Raises:
        InputError: naming ``where`` and what is wrong.
    """

    def bad(what: str) -> InputError:
        return InputError(f"not a ragnet eval summary: {what}; run the eval again (it writes report.html itself)",
                          path=where)

    if not isinstance(summary, dict) or not isinstance(summary.get("meta"), dict):
        raise bad("no 'meta' object")
    meta = summary["meta"]
    strategies = meta.get("strategies")
    if strategies is not None and not (isinstance(strategies, list) and all(
            isinstance(s, dict) and isinstance(s.get("label"), _SCALAR) for s in strategies)):
        raise bad("'meta' 'strategies' must be an array of objects with a 'label'")
    for key in ("data", "index", "set", "split", "mode", "created"):
        if meta.get(key) is not None and not isinstance(meta.get(key), str):
            raise bad(f"'meta' {key!r} must be a string, got {kind_of(meta.get(key))}")
    if summary.get("strategies") is not None and not isinstance(summary.get("strategies"), dict):
        raise bad(f"'strategies' must be an object, got {kind_of(summary.get('strategies'))}")


def check_page_target(path: str | Path, marker: str, argument: str = "html") -> Path:
    """Where ``ragnet eval report`` may write its page: ``path`` if it does not exist, is the
    ``report.html`` of a folder holding ``marker`` (ragnet eval's), or is a page ragnet wrote.

    Raises:
        InputError: ``path`` is a folder, or an existing file ragnet did not write; nothing is changed.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder; give the path of the page to write (a new .html file)",
                         argument=argument)
    if not path.exists() and not path.is_symlink():
        return path
    if path.name == "report.html" and (path.parent / marker).is_file() and not path.is_symlink():
        return path  # a run folder's own page
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""
    if path.is_file() and not path.is_symlink() and any(sig in head for sig in _SIGNATURES):
        return path  # a page ragnet eval report wrote before
    raise InputError(f"{path} exists and is not a page ragnet eval wrote; ragnet eval report writes only a new "
                     "file, or report.html in a ragnet eval run folder: choose another path (nothing was changed)",
                     argument=argument)
