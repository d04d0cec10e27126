r"""The one filter every line ragnet prints goes through: what a terminal would obey is shown instead.

A file name, a document, an LM answer or a question id can hold characters a terminal acts on:
ESC starts a sequence that can write the clipboard (OSC 52), set the window title (OSC 0),
plant a link (OSC 8) or clear the screen (CSI 2J); the other C0 and C1 controls and DEL move the
cursor or ring; bidirectional controls (U+202E, U+2066-U+2069...) display text reversed
(``report\u202etxt.exe.md`` shows as ``reportdm.exe.txt``); a newline in a file name forges a
line of an error list or of ``ragnet ask``'s evidence. :func:`printable` shows each of them as an
escape (``\x1b``, ``\u202e``), keeping newlines and tabs; :func:`printable_name` shows newlines
and tabs escaped too, for names embedded in a line; :func:`printable_json` writes JSON whose
strings carry them as JSON escapes, so the data is unchanged and the terminal sees no control.

The ``ragnet`` command also passes everything it writes through :func:`printable_stream`
(:mod:`ragnet.cli.safe_text`), which lets through only its own colours (SGR sequences) and a
progress bar's leading carriage return.

Example:
    >>> printable("a\x1b]52;c;ZXZpbA==\x07b")
    'a\\x1b]52;c;ZXZpbA==\\x07b'
    >>> printable_name("report\u202etxt.exe.md\nerror: forged")
    'report\\u202etxt.exe.md\\nerror: forged'
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["BIDI_CONTROLS", "printable", "printable_json", "printable_name", "printable_stream"]

#: Characters that change the direction text is displayed in (Unicode's bidirectional controls).
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# U+2028/2029 end a line in some terminals and editors
_OTHER = "\u2028\u2029"


def _escape(char: str) -> str:
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _table(keep: str) -> dict[int, str]:
    chars = [chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))] + list(BIDI_CONTROLS + _OTHER)
    return {ord(c): _escape(c) for c in chars if c not in keep}


_TEXT = _table("\n\t")
_NAME = {**_table(""), ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"}
_JSON = {ord(c): f"\\u{ord(c):04x}" for c in [chr(0x7F), *map(chr, range(0x80, 0xA0)), *BIDI_CONTROLS, *_OTHER]}
_ANY = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_TEXT)) + "]")  # what printable escapes
# what the command itself writes: SGR (colour and style) sequences, and "\r" opening a progress bar's line
_OWN = re.compile(r"\x1b\[[0-9;]*m")


def printable(text: Any) -> str:
    r"""``text`` with every control character but newline and tab, and every bidirectional
    control, shown as an escape (``\x1b``, ``\x9b``, ``\u202e``).

    Example:
        >>> printable("line 1\n\tline 2\x1b[2J\x7f")
        'line 1\n\tline 2\\x1b[2J\\x7f'
    """
    return str(text).translate(_TEXT)


def printable_name(text: Any) -> str:
    r"""A name (a file, an id, a title) for one line: :func:`printable`, with newline, tab and
    carriage return shown as ``\n``, ``\t`` and ``\r``.

    Example:
        >>> printable_name("a\nb\tc.md")
        'a\\nb\\tc.md'
    """
    return str(text).translate(_NAME)


def printable_json(obj: Any, **options: Any) -> str:
    r"""``json.dumps(obj, ensure_ascii=False, **options)`` with DEL, the C1 controls and the
    bidirectional controls written as JSON escapes (``json`` escapes the C0 ones itself): the
    same data, and nothing a terminal acts on.

    Example:
        >>> printable_json({"name": "a\u202eb\x9b"})
        '{"name": "a\\u202eb\\u009b"}'
    """
    return json.dumps(obj, ensure_ascii=False, **options).translate(_JSON)


def printable_stream(text: str) -> str:
    r"""What the ``ragnet`` command writes, filtered: :func:`printable` but for newlines, tabs,
    SGR colour sequences and a carriage return opening the text (a progress bar redrawing its line).

    Example:
        >>> printable_stream("\r\x1b[31merror:\x1b[0m a\x1b]0;title\x07 b\rc\n")
        '\r\x1b[31merror:\x1b[0m a\\x1b]0;title\\x07 b\\rc\n'
    """
    if not _ANY.search(text):
        return text
    out: list[str] = []
    at = 0
    if text.startswith("\r"):
        out.append("\r")
        at = 1
    while at < len(text):
        m = _ANY.search(text, at)
        if m is None:
            out.append(text[at:])
            break
        out.append(text[at:m.start()])
        own = _OWN.match(text, m.start()) if m.group() == "\x1b" else None
        if own is not None:
            out.append(own.group())
            at = own.end()
        else:
            out.append(_escape(m.group()))
            at = m.end()
    return "".join(out)
