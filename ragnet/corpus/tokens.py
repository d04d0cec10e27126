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
from pathlib import Path

ENCODING_NAME = "cl100k_base"


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


def count_tokens(text: str) -> int:
    """Number of LM tokens in ``text`` (special-token text counted as ordinary text)."""
    return len(_encoding().encode_ordinary(text))


def count_tokens_batch(texts: list[str]) -> list[int]:
    """Token counts of many texts.

    A plain loop: tiktoken's ``encode_batch`` hands each text to a thread pool, which costs
    far more than encoding a short text.
    """
    encode = _encoding().encode_ordinary
    return [len(encode(t)) for t in texts]
