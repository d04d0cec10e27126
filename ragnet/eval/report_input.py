"""What ``ragnet eval report`` reads and writes, checked first (issue 47, items 8 and 9).

Reading: a run folder's ``summary.json`` and result rows come from a file anyone can edit or
copy half of. Each field the page reads is checked for its type (:func:`check_row`,
:func:`check_summary`): a malformed one is an :class:`~ragnet.errors.InputError` naming the file,
the line and the field, never a ``KeyError`` or ``TypeError`` from deep inside the rendering.

Writing: the page goes only where ``ragnet eval`` itself may write (:func:`check_page_target`):
a path that does not exist yet, the ``report.html`` of a folder ``ragnet eval`` marked as its
own, or a page ``ragnet eval report`` wrote before (it carries :data:`GENERATOR`). Anything else
(a run's ``summary.json``, a user's ``mine.html``, a folder, the ``report.html`` of a folder
someone copied a run into) is refused in one line and left as it was.

Example:
    >>> check_row({"strategy": "basic", "id": "q1", "f1": "x"}, "results.jsonl", 3)
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: results.jsonl:3: malformed result row: 'f1' must be a number or null, got a string
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ragnet.errors import InputError

__all__ = ["GENERATOR", "check_page_target", "check_row", "check_summary"]

#: The ``<meta name="generator">`` every page ``ragnet eval`` writes carries.
GENERATOR = "ragnet eval report"
_SIGNATURES = (f'<meta name="generator" content="{GENERATOR}">'.encode(), b"<title>ragnet eval: ")
_SCALAR = (str, int, float)
_NUMBERS = ("em", "f1", "llm_match", "gold_all", "gold_fraction")
_TEXTS = ("question", "answer", "type", "level", "error", "error_kind")
_SCALAR_LISTS = ("answers", "context", "evidence")
_DICTS = ("usage", "judge", "gold")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _bad(where: str | Path, line: int | None, what: str) -> InputError:
    return InputError(f"malformed result row: {what}", path=where, line=line)


def check_row(row: Mapping[str, Any], where: str | Path, line: int | None = None) -> None:
    """Refuse a result row whose fields are not of the types the report reads.

    Raises:
        InputError: naming ``where``, ``line`` and the field.
    """
    for key in ("strategy", "id"):
        if not isinstance(row.get(key), _SCALAR) or isinstance(row.get(key), bool):
            raise _bad(where, line, f"{key!r} must be a string or a number, got {_kind(row.get(key))}")
    for key in _NUMBERS:
        value = row.get(key)
        if value is not None and not isinstance(value, (int, float)):
            raise _bad(where, line, f"{key!r} must be a number or null, got {_kind(value)}")
    for key in _TEXTS:
        value = row.get(key)
        if value is not None and not isinstance(value, _SCALAR):
            raise _bad(where, line, f"{key!r} must be a string, a number or null, got {_kind(value)}")
    for key in _SCALAR_LISTS:
        value = row.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, _SCALAR) for v in value)):
            raise _bad(where, line, f"{key!r} must be an array of strings, got {_kind(value)}"
                       + (" holding other values" if isinstance(value, list) else ""))
    for key in _DICTS:
        value = row.get(key)
        if value is not None and not isinstance(value, dict):
            raise _bad(where, line, f"{key!r} must be an object or null, got {_kind(value)}")
    for key in ("passages", "trace"):
        value = row.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            raise _bad(where, line, f"{key!r} must be an array of objects or null, got {_kind(value)}"
                       + (" holding other values" if isinstance(value, list) else ""))
    gold = row.get("gold") or {}
    for key in ("documents", "sentences"):
        value = gold.get(key)
        if value is not None and not isinstance(value, list):
            raise _bad(where, line, f"'gold' {key!r} must be an array, got {_kind(value)}")


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
            raise bad(f"'meta' {key!r} must be a string, got {_kind(meta.get(key))}")
    if summary.get("strategies") is not None and not isinstance(summary.get("strategies"), dict):
        raise bad(f"'strategies' must be an object, got {_kind(summary.get('strategies'))}")


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
