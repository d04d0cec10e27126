"""The ``ragnet`` command: parses arguments and calls the library; the work lives in ``ragnet``.

One module per command group (:mod:`~ragnet.cli.index_search` for index/search/fetch-model,
:mod:`~ragnet.cli.ask`, :mod:`~ragnet.cli.demo`, :mod:`~ragnet.cli.eval`,
:mod:`~ragnet.cli.optimize`, :mod:`~ragnet.cli.bench`), each registering its commands with
``register(app)``. Every user error (bad file, bad argument, incompatible index) is printed as
one clear line and exits with status 2, in one place (:class:`ragnet.cli.common.RagnetGroup`).
No module of the library imports this package.
"""

from __future__ import annotations

import atexit
import logging
import os

# Offline by default: nothing may download model weights or price maps at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ragnet.cli import ask, bench, demo, eval, index_search, optimize, serve  # noqa: E402
from ragnet.cli.common import TruncationNotes, new_app  # noqa: E402

__all__ = ["app", "main"]

app = new_app("ragnet: retrieval strategies that beat plain top-k RAG, as optimizable DSPy programs.")
for _group in (index_search, ask, demo, eval, optimize, bench, serve):
    _group.register(app)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one line on stderr (``warning: ...``), without the source path and code line."""
    import sys

    print(f"warning: {' '.join(str(message).split())}", file=file or sys.stderr)


def main() -> None:
    """Console entry point (``ragnet``)."""
    import warnings

    warnings.showwarning = _one_line_warning
    notes = TruncationNotes()
    logging.getLogger("dspy.clients.lm").addFilter(notes)
    atexit.register(notes.print_summary)
    app()
