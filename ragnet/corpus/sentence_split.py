"""Sentence boundaries, as character spans: the one sentence splitter of ragnet.

Used to cut chunks at sentence boundaries (:mod:`ragnet.corpus.chunking`), to split chunks
into the sentences the index stores for sentence-level selection
(:mod:`ragnet.index.sentence_store`), and to check LM crops. Rule-based and fast: a sentence ends
at terminal punctuation followed by a capitalised word or a digit (not after common
abbreviations, initials such as "J. R. R. Tolkien", or "No." before a number), at a blank
line, and before a Markdown block start (a list marker counts only with text after it on its
line: a wrapped PDF line that begins with "70." ends the sentence before it, it does not start
a list). Spans index the original text, so sentences are
reproduced verbatim. It agrees with HotpotQA's own sentence split on most paragraphs
(docs/results/README.md).

Example:
    >>> split_sentences("Paris is big. It is old.\\n\\n- a list item")
    ['Paris is big.', 'It is old.', '- a list item']
    >>> split_sentences("The line length is set to\\n70.\\nSteps:\\n1. read\\n2. write")
    ['The line length is set to\\n70.', 'Steps:', '1. read', '2. write']
"""

from __future__ import annotations

import re

__all__ = ["sentence_spans", "split_sentences"]

# Candidate sentence ends: terminal punctuation (plus closing quotes/brackets) then
# whitespace, or a paragraph break, or a newline before a Markdown block start.
# Each alternative starts only where its run of punctuation or blanks starts (the lookbehinds):
# tried inside a long run ("....", a megabyte of spaces) it would rescan the rest of the run
# from every position, quadratic in the run's length.
_BREAK_RE = re.compile(
    r"""(?<![.!?…])(?P<punct>[.!?…]+["'”’)\]]*)(?P<space>[ \t\u00a0]*\n[ \t]*\n\s*|\s+)
      | (?<![ \t])(?P<para>[ \t]*\n[ \t]*\n\s*)
      | (?<![ \t])(?P<block>[ \t]*\n(?=[ \t]*(?:\#{1,6}\s|[-*+][ \t]+\S|\d{1,3}[.)][ \t]+\S|>|\||```)))""",
    re.VERBOSE,
)
# A period after these is not a sentence end (compared casefolded, without the period).
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft rev gen col lt sgt capt cmdr gov sen rep pres hon
    vs etc al inc ltd co corp bros dept univ assn est approx e.g i.e cf viz
    jan feb mar apr jun jul aug sep sept oct nov dec""".split()
)
# ... and after these only when a number follows ("No. 5", "Vol. 2", "ca. 1900").
_NUMBER_ABBREVIATIONS = frozenset("no nos vol vols ch pp p fig figs eq ca art sec".split())
_OPENERS = "\"'“‘(["


def _is_sentence_end(text: str, m: re.Match) -> bool:
    """Whether a punctuation match ends a sentence (not an abbreviation or an initial)."""
    space = m.group("space")
    if space.count("\n") >= 2:
        return True  # a paragraph break ends a sentence whatever precedes it
    nxt = text[m.end() : m.end() + 2]
    first = nxt[1:2] if nxt[:1] in _OPENERS else nxt[:1]
    if not (first.isupper() or first.isdigit() or "\n" in space):
        return False  # "e.g. the", "approx. five": a lower-case continuation
    if m.group("punct")[0] != ".":
        return True
    before = text[max(0, m.start() - 40) : m.start()].rsplit(None, 1)
    if not before:
        return True
    word = before[-1].lstrip(_OPENERS).casefold()
    if len(word) == 1 and word.isalpha():
        return False  # an initial: "J. R. R. Tolkien"
    if word in _ABBREVIATIONS or "." in word:  # "Dr.", "U.S.", "e.g."
        return False
    if word in _NUMBER_ABBREVIATIONS and first.isdigit():
        return False
    return True


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text``, without surrounding whitespace.

    Example:
        >>> t = "Dr. Smith met J. R. R. Tolkien in the U.S. in 1950. They talked.\\n\\n# Next"
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['Dr. Smith met J. R. R. Tolkien in the U.S. in 1950.', 'They talked.', '# Next']
    """
    spans: list[tuple[int, int]] = []
    start = len(text) - len(text.lstrip())
    for m in _BREAK_RE.finditer(text):
        if m.group("punct") is not None:
            if not _is_sentence_end(text, m):
                continue
            end = m.start("space")
        else:
            end = m.start()
        if end > start:
            spans.append((start, end))
        start = m.end()
    end = len(text.rstrip())
    if end > start:
        spans.append((start, end))
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see :func:`sentence_spans`).

    Example:
        >>> split_sentences("The U.S. Army was founded in 1775. It fought in many wars.")
        ['The U.S. Army was founded in 1775.', 'It fought in many wars.']
    """
    return [text[a:b] for a, b in sentence_spans(text)]
