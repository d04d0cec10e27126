"""Token counting for chunking and budgets.

ragnet counts LM tokens with tiktoken's ``cl100k_base`` encoding. It is a good proxy for
modern chat-model tokenizers, and litellm ships the encoding file, so counting works
offline. Budgets are therefore approximate for models with other tokenizers (Qwen's
tokenizer yields close to cl100k's counts on English prose); ``OneShotRAG`` leaves headroom.

Example:
    >>> count_tokens("Paris is the capital of France.")
    7
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

ENCODING_NAME = "cl100k_base"
#: The most characters one token can stand for (cl100k's longest token is 128 spaces): a text
#: longer than ``n * MAX_TOKEN_CHARS`` characters holds more than ``n`` tokens.
MAX_TOKEN_CHARS = 128


def _litellm_tiktoken_cache() -> str | None:
    """Directory of the cl100k file bundled with litellm, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
    return str(folder) if folder.is_dir() else None


@functools.lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        cache = _litellm_tiktoken_cache()
        if cache:
            os.environ["TIKTOKEN_CACHE_DIR"] = cache
    return tiktoken.get_encoding(ENCODING_NAME)


def encode(text: str) -> list[int]:
    """Token ids of ``text``."""
    return _encoding().encode(text, disallowed_special=())


def decode(ids: list[int]) -> str:
    """Text of token ids."""
    return _encoding().decode(ids)


#: Characters tiktoken encodes in one call. Longer texts are counted in blocks: tiktoken's
#: pre-tokenizer overflows its stack on a run of spaces of some hundred thousand characters
#: (a panic, not an exception), and one call holds every token id of its text in memory.
BLOCK_CHARS = 65_536
_CUT_SEARCH = 4_096  # how far back from a block's end a cut before a word is looked for
_SPACE_BEFORE_WORD = re.compile(r" (?=\S)")


def count_tokens(text: str) -> int:
    """Number of LM tokens in ``text`` (special-token text counted as ordinary text).

    A text longer than :data:`BLOCK_CHARS` is counted block by block, each cut before a word
    where one is near (the count is then exact) and anywhere in a long unbroken run (a token
    or two more than one call would count, per cut).

    Example:
        >>> count_tokens("word " * 20_000 + "end") == 20_001
        True
    """
    if len(text) <= BLOCK_CHARS:
        return len(_encoding().encode_ordinary(text))
    return _count_blocks(text)


def _count_blocks(text: str) -> int:
    encode = _encoding().encode_ordinary
    total, start, size = 0, 0, len(text)
    while start < size:
        cut = start + BLOCK_CHARS
        if cut >= size:
            cut = size
        else:
            # the last space before a word: where tiktoken's pre-tokenizer cuts itself (" word")
            last = None
            for last in _SPACE_BEFORE_WORD.finditer(text, max(start + 1, cut - _CUT_SEARCH), cut):
                pass
            if last is not None:
                cut = last.start()
        total += len(encode(text[start:cut]))
        start = cut
    return total


def count_tokens_batch(texts: list[str]) -> list[int]:
    """Token counts of many texts.

    A plain loop: tiktoken's ``encode_batch`` hands each text to a thread pool, which costs
    far more than encoding a short text.
    """
    encode = _encoding().encode_ordinary
    return [len(encode(t)) if len(t) <= BLOCK_CHARS else _count_blocks(t) for t in texts]


def count_within(text: str, limit: int) -> int:
    """The token count of ``text`` when it holds at most ``limit`` tokens, else some number above
    ``limit``; a text too long to fit (:data:`MAX_TOKEN_CHARS`) is not encoded at all.

    Example:
        >>> count_within("Paris is the capital of France.", 16), count_within("x " * 10_000, 16) > 16
        (7, True)
    """
    if len(text) > limit * MAX_TOKEN_CHARS:
        return limit + 1
    return count_tokens(text)


def token_prefix(text: str, start: int, end: int, limit: int, width: int | None = None) -> tuple[int, int]:
    """A prefix ``text[start:b]`` of ``text[start:end]`` holding at most ``limit`` tokens (``limit``
    or a few less; at least one character): ``(b, its token count)``.

    Only a window a little longer than the prefix is encoded (``width`` characters, default
    ``4 * limit``, doubled while it holds fewer than ``limit`` tokens), so cutting a long text
    into pieces this way costs time linear in its length.

    Example:
        >>> word = "abcdefghij" * 100
        >>> b, n = token_prefix(word, 0, len(word), 16)
        >>> n <= 16 and count_tokens(word[:b]) == n and b > 16
        True
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    encoding = _encoding()
    width = max(64, width or 4 * limit)
    while True:
        stop = min(end, start + width)
        ids = encoding.encode_ordinary(text[start:stop])
        if len(ids) <= limit and stop < end:
            width *= 2
            continue
        if len(ids) <= limit:
            return end, len(ids)
        # the characters the first `limit` tokens spell (a character they split is left out)
        cut = start + max(1, len(encoding.decode_bytes(ids[:limit]).decode("utf-8", "ignore")))
        n = count_tokens(text[start:cut])
        while n > limit and cut - start > 1:  # encoded alone, the prefix took a token more
            cut -= max(1, (cut - start) // 16)
            n = count_tokens(text[start:cut])
        return cut, n
