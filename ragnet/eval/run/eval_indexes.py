"""The indexes evaluations search: one pooled index per benchmark, or one small index per question.

:func:`pooled_index` is the one place a benchmark's pooled index is loaded or built (``ragnet
eval``, ``eval retrieval``, ``bench core`` and ``optimize`` all call it, through
:func:`load_pooled` from the command line). Unless a folder is given it is cached by content
hash under ``$RAGNET_HOME/indexes`` (:mod:`ragnet.eval.run.index_cache`), so each corpus is
embedded once per machine. :class:`EvalIndexes` hands each question the index it is answered
over, and :class:`NoIndex` stands in where a program is built for one of its steps only.

Example:
    >>> import tempfile
    >>> from ragnet.eval.run.datasets import EvalSet
    >>> from ragnet.corpus.types import Document
    >>> ev = EvalSet(name="toy", path=None, mode="pooled", split=None, questions=[], dedup="title",
    ...              documents=[Document(id="Paris", title="Paris", text="Paris is the capital of France.")])
    >>> index = pooled_index(ev, root=tempfile.mkdtemp(), show_progress=False)
    >>> index.path.name.startswith("toy-pooled-"), len(index)
    (True, 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragnet.corpus.outputs import INDEX_MANIFEST
from ragnet.errors import InputError, RagnetError

__all__ = ["EvalIndexes", "NoIndex", "docs_index", "load_pooled", "pooled_index"]


def pooled_index(eval_set: Any, *, path: str | Path | None = None, embedder: Any = None,
                 root: str | Path | None = None, show_progress: bool = True,
                 log: Callable[[str], None] | None = None):
    """The pooled index of ``eval_set``'s documents: loaded, or built once (minutes for a
    benchmark's pooled corpus) and cached.

    Args:
        eval_set: an ``EvalSet`` in pooled mode (``ragnet.eval.run.datasets.load_eval_set``). Sets
            with a ``corpus.jsonl`` pool that corpus; distractor sets pool every question's
            paragraphs.
        path: a folder to load the index from, or to build it in when it holds none. None: the
            content-hash cache, ``<root>/<set>-pooled-<hash12>``.
        embedder: an ``Embedder`` or model name (None: the bundled MiniLM).
        root: the cache folder (default ``$RAGNET_HOME/indexes``).
        show_progress: progress bars while building.
        log: receives a one-line notice before a build.

    Raises:
        InputError: the set has no pooled documents (per-question mode).
    """
    from ragnet.eval.run.index_cache import cached_index
    from ragnet.index import Index

    if eval_set.documents is None:
        raise InputError(f"{eval_set.name} was loaded in {eval_set.mode} mode and has no pooled corpus",
                         argument="mode")
    if path is None:
        return cached_index(eval_set.documents, f"{eval_set.name}-pooled", embedder=embedder, root=root,
                            show_progress=show_progress, log=log)
    path = Path(path)
    if (path / INDEX_MANIFEST).is_file():
        return Index.load(path, embedder=embedder)
    if log is not None:
        log(f"building pooled index for {eval_set.name} at {path} (one-off)")
    return Index.build(eval_set.documents, path, embedder=embedder, show_progress=show_progress)


def docs_index(folder: str | Path, *, embedder: Any = None, root: str | Path | None = None,
               show_progress: bool = True, log: Callable[[str], None] | None = None):
    """The index of a folder of documents (``ragnet eval --docs``): its files read as ``ragnet
    index`` reads them (a file that cannot be read stops the run, naming it), indexed once and
    cached by content under ``root``, as a benchmark's pooled index is."""
    from ragnet.corpus.loader import load_documents
    from ragnet.eval.run.index_cache import cached_index

    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("not a folder of documents", path=folder, argument="docs")
    documents = load_documents([folder])
    return cached_index(documents, f"docs-{folder.name}", embedder=embedder, root=root,
                        show_progress=show_progress, log=log)


def load_pooled(data: str | Path, *, data_dir: str | Path | None = None, path: str | Path | None = None,
                show_progress: bool = True, log: Callable[[str], None] | None = None):
    """Every question of a benchmark and its pooled index: ``(index, eval_set)``.

    ``eval_set`` holds all questions (no split); see :func:`pooled_index` for the index.
    """
    from ragnet.eval.run.datasets import load_eval_set

    ev = load_eval_set(data, data_dir=data_dir, split=None, mode="pooled")
    return pooled_index(ev, path=path, show_progress=show_progress, log=log), ev


class EvalIndexes:
    """The index a question is answered over: one index for every question (pooled, or given),
    or one small cached index per question (per-question mode; the last few stay loaded, since
    jobs run question by question).

    Args:
        eval_set: the ``EvalSet`` (None when ``index`` is given).
        index: an index every question is answered over (e.g. one the caller built).
        embedder: an ``Embedder`` shared by every index built or loaded here.
        root: the cache folder (default ``$RAGNET_HOME/indexes``).
        show_progress: progress bars while building the pooled index.
        log: receives a one-line notice before a build.
        keep: per-question indexes kept loaded.
    """

    def __init__(self, eval_set: Any = None, *, index: Any = None, embedder: Any = None,
                 root: str | Path | None = None, show_progress: bool = True,
                 log: Callable[[str], None] | None = None, keep: int = 4) -> None:
        from ragnet.eval.run.index_cache import index_root

        if eval_set is None and index is None:
            raise InputError("give an eval set or an index to answer the questions over", argument="index")
        self.eval_set = eval_set
        self.embedder = embedder
        self.root = Path(root) if root is not None else index_root()
        self.keep = max(2, keep)
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, Any] = OrderedDict()
        self.pooled = index
        if index is None and eval_set.mode == "pooled":
            self.pooled = pooled_index(eval_set, embedder=embedder, root=self.root, show_progress=show_progress,
                                       log=log)

    @property
    def path(self) -> str:
        """Where the index lives (per-question mode: the folder of the per-question indexes)."""
        if self.pooled is not None:
            return str(getattr(self.pooled, "path", None) or "(in memory)")
        return str(self.root / f"{self.eval_set.name}-per-question")

    def get(self, record: Any) -> Any:
        """The index ``record`` is answered over."""
        from ragnet.eval.run.index_cache import cached_index

        if self.pooled is not None:
            return self.pooled
        with self._lock:
            index = self._recent.get(record.id)
            if index is not None:
                self._recent.move_to_end(record.id)
                return index
        index = cached_index(self.eval_set.question_documents(record), record.id, embedder=self.embedder,
                             root=self.root / f"{self.eval_set.name}-per-question", show_progress=False)
        with self._lock:
            self._recent[record.id] = index
            while len(self._recent) > self.keep:
                self._recent.popitem(last=False)
        return index


class NoIndex:
    """Stands in for an index where a program is built for one of its steps only: a step
    compiled alone (its cases carry their own paragraphs) or the laziness experiment (it hands
    the step its contexts). Saving such a program stores prompts and demos, never the index.

    Example:
        >>> len(NoIndex())
        0
        >>> NoIndex().search("q")
        Traceback (most recent call last):
        ...
        ragnet.errors.RagnetError: this program was built without an index (for one of its steps only); load the saved file into a program built on a real index (`ragnet ask --program FILE`)
    """

    def search(self, *args: Any, **kwargs: Any):
        raise RagnetError("this program was built without an index (for one of its steps only); load the saved "
                          "file into a program built on a real index (`ragnet ask --program FILE`)")

    def __len__(self) -> int:
        return 0
