"""LM setup for ragnet: litellm model ids, the local llama.cpp engine, the cache, usage.

Names load lazily, so ``ragnet.lm.fetch_model`` (used by ``ragnet fetch-model``) works
without importing DSPy.

Example:
    >>> import dspy, ragnet.lm
    >>> from dspy.utils import DummyLM
    >>> with dspy.context(lm=DummyLM([{"answer": "4"}])), ragnet.lm.track_usage() as usage:
    ...     _ = dspy.Predict("question -> answer")(question="2+2?")
    >>> usage.lm_calls
    1
"""

from __future__ import annotations

from ragnet._lazy import lazy_getattr, listed_dir

_LAZY = {
    "configure": "ragnet.lm.config",
    "get_lm": "ragnet.lm.config",
    "make_lm": "ragnet.lm.config",
    "track_usage": "ragnet.lm.usage",
    "UsageMeter": "ragnet.lm.usage",
    "fetch_model": "ragnet.lm.models",
    "resolve_model_path": "ragnet.lm.models",
    "ModelFetchError": "ragnet.lm.models",
    "ModelNotFoundError": "ragnet.lm.models",
    "MODELS": "ragnet.lm.models",
    "DEFAULT_MODEL": "ragnet.lm.models",
    "LlamaCppEngine": "ragnet.lm.local",
    "LMCallTimeoutError": "ragnet.lm.deadline",
    "DeadlineLM": "ragnet.lm.deadline",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(globals(), _LAZY)
__dir__ = listed_dir(__all__)
