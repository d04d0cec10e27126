"""Lazy package attributes: a name is imported from its module on first use, then kept.

Every ragnet package that re-exports names from heavy modules (DSPy, torch, FAISS) builds its
module-level ``__getattr__`` (PEP 562) here, so ``import ragnet`` and ``import ragnet.lm`` stay
fast and the loader is written once.

Example (in a package's ``__init__.py``)::

    _LAZY = {"Index": "ragnet.index.hybrid"}
    __all__ = sorted(_LAZY)
    __getattr__ = lazy_getattr(globals(), _LAZY)
    __dir__ = listed_dir(__all__)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_getattr", "listed_dir"]


def lazy_getattr(namespace: dict[str, Any], names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``names[name]`` (a module path) on first access of
    ``name``, stores the value in ``namespace`` (the package's ``globals()``) so later accesses
    are plain lookups, and raises Python's usual ``AttributeError`` for any other name.

    Example:
        >>> ns = {"__name__": "pkg"}
        >>> get = lazy_getattr(ns, {"dedent": "textwrap"})
        >>> get("dedent").__module__, "dedent" in ns
        ('textwrap', True)
        >>> get("nope")
        Traceback (most recent call last):
        ...
        AttributeError: module 'pkg' has no attribute 'nope'
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__


def listed_dir(names: Iterable[str]) -> Callable[[], list[str]]:
    """A module ``__dir__`` that lists ``names`` (the package's ``__all__``), sorted.

    Example:
        >>> listed_dir(["b", "a"])()
        ['a', 'b']
    """
    listed = tuple(names)

    def __dir__() -> list[str]:
        return sorted(listed)

    return __dir__
