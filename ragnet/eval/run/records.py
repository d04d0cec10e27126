"""Read a field the same way from a ``QARecord``, a ``dspy.Example``, a ``dspy.Prediction`` or a dict.

Metrics take any of them: the runner scores ``QARecord``\\ s, DSPy's optimizers and
``dspy.Evaluate`` pass ``Example``\\ s (``ragnet.eval.run.datasets.to_examples``), tests pass dicts.

Example:
    >>> get_field({"answer": "Paris"}, "answer"), gold_answers({"answers": "Paris"})
    ('Paris', ['Paris'])
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_field", "gold_answers"]


def get_field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a dict, else ``obj.name``; ``default`` when missing or None.

    Example:
        >>> from types import SimpleNamespace
        >>> get_field(SimpleNamespace(level=None), "level", 0), get_field({}, "level", 0)
        (0, 0)
    """
    if isinstance(obj, dict):
        return obj.get(name, default)
    try:
        value = getattr(obj, name)
    except (AttributeError, KeyError):
        return default
    return default if value is None else value


def gold_answers(example: Any) -> list[str]:
    """The accepted answers of ``example``: ``answers`` (a list or one string), else ``answer``.

    Example:
        >>> gold_answers({"answer": "Tokyo"}), gold_answers({"answers": ["Tokyo", 1]})
        (['Tokyo'], ['Tokyo', '1'])
    """
    answers = get_field(example, "answers", None)
    if answers is None:
        answers = get_field(example, "answer", [])
    return [answers] if isinstance(answers, str) else [str(a) for a in answers]
