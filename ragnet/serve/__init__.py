"""``ragnet serve``: one long-running process that answers questions over an index by HTTP.

The index, the embedder and the LMs load once; every request then pays only for its own search
and LM calls. Endpoints (:mod:`ragnet.serve.app`):

* ``POST /v1/chat/completions``: OpenAI-compatible (the model is the strategy: ``ragnet-auto``,
  ``ragnet-oneshot:sentences+hops`` ...; ``GET /v1/models`` lists them), with the answer's
  ``citations`` in the response and a Sources list in the message; ``stream: true`` sends the
  reader's tokens as it writes them, as server-sent events (:mod:`ragnet.serve.chat`).
* ``POST /ask`` (question, strategy, budget, trace), ``GET /search?q=&k=``, ``GET /health``,
  ``POST /reload``, ``GET /library`` (a served folder's files and last update), and ``GET /``, a
  chat page: follow-ups, the reader's tokens as they come, the cited passages
  (:mod:`ragnet.serve.routes`, :mod:`ragnet.serve.page`).
* ``POST /feedback``: a person's mark of an answer (right or wrong, and the line that states it),
  kept as a question row of ``INDEX/feedback.jsonl`` for ``ragnet eval --docs``
  (:mod:`ragnet.serve.feedback`).
* ``GET /files/<path as indexed>``: the indexed files of the folders ``--docs`` names (and of a
  served folder), where every citation's ``url`` opens it at its page or quoted sentence
  (:mod:`ragnet.serve.files`).

It serves an index, or a folder of documents (``ServeOptions(folder=...)``, ``ragnet serve
~/manuals``): indexed in a cache folder (:mod:`ragnet.serve.folder`), watched
(:mod:`ragnet.serve.watch`) and synced after each change (:mod:`ragnet.serve.library`).

Safe by default: it binds 127.0.0.1, checks a Bearer key when one is set, limits body and
question sizes, answers every bad request with one JSON error, and cuts a request at its
deadline (504) (:mod:`ragnet.serve.errors`). Questions queue for the LM
(:mod:`ragnet.serve.answering`); an index updated on disk is picked up between requests, never
half (:mod:`ragnet.serve.state`). Past one process: Ray Serve replicas over one index folder
(:mod:`ragnet.serve.ray_serve`, the ``ragnet[scale]`` extra).

Example:
    >>> from ragnet.serve import ServeOptions
    >>> ServeOptions(index="my-index").host
    '127.0.0.1'
"""

from __future__ import annotations

from ragnet.serve.options import ServeOptions

__all__ = ["ServeOptions", "create_app"]


def create_app(options: ServeOptions, **kwargs):
    """The FastAPI application for ``options`` (see :func:`ragnet.serve.app.create_app`)."""
    from ragnet.serve.app import create_app as make

    return make(options, **kwargs)
