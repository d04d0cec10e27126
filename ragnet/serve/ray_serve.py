"""``ragnet serve`` past one process: Ray Serve replicas of the same application, behind Ray's
HTTP proxy, every one answering from the same index folder on disk (``pip install 'ragnet[scale]'``).

Each replica builds :func:`ragnet.serve.app.create_app` itself, in its own process: it loads the
index (the on-disk IVF-PQ kind reads its lists from the shared page cache, so N replicas on one
machine hold one copy of the index in memory) and its own LMs, and queues its own questions, one
llama.cpp call at a time. Every response names the replica that answered it
(``X-Ragnet-Replica``). An index updated by ``ragnet index`` is picked up by each replica on its
own schedule (``reload_every``). docs/design.md ("Serving past one machine") says what limits it.

    import ray
    from ray import serve
    from ragnet.serve import ServeOptions
    from ragnet.serve.ray_serve import application

    ray.init()
    serve.start(http_options={"host": "127.0.0.1", "port": 8000})
    serve.run(application(ServeOptions(index="manuals-index"), replicas=2), route_prefix="/")

Example:
    >>> application(ServeOptions(index="my-index"), replicas=0)
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: argument 'replicas': must be a positive number of replicas, got 0
"""

from __future__ import annotations

from typing import Any, Callable

from ragnet.errors import InputError, MissingDependencyError
from ragnet.serve.options import ServeOptions

__all__ = ["application"]

REPLICA_HEADER = "x-ragnet-replica"


def _serve() -> Any:
    try:
        from ray import serve
    except ImportError as exc:  # ray itself, or Ray Serve's own dependencies (grpc, ...)
        raise MissingDependencyError(f"ray[serve] is not installed (needed for Ray Serve replicas: {exc}); "
                                     "run: pip install 'ragnet[scale]'") from exc
    return serve


class _Named:
    """ASGI middleware: every HTTP response carries ``X-Ragnet-Replica: <name>``."""

    def __init__(self, app: Any, name: str) -> None:
        self.app, self.header = app, (REPLICA_HEADER.encode(), name.encode())

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), self.header]}
            await send(message)

        await self.app(scope, receive, sending)


def application(options: ServeOptions, *, replicas: int = 2, make_lm: Callable[[], Any] | None = None,
                ray_actor_options: dict[str, Any] | None = None, name: str = "ragnet") -> Any:
    """A Ray Serve application of ``replicas`` copies of ``ragnet serve`` (for ``serve.run``).

    Args:
        options: every replica's settings; ``host`` and ``port`` are Ray's HTTP proxy's
            (``serve.start(http_options=...)``), not these, but the ``Host`` check reads ``host``:
            a proxy on another address or name needs it, or ``allowed_hosts``
            (:mod:`ragnet.serve.hosts`).
        replicas: how many (one per llama.cpp model and 2-4 cores).
        make_lm: builds the LM of every step in each replica (tests: a scripted LM); None: the
            LMs of ``options.lm``, as ``ragnet serve`` sets them up.
        ray_actor_options: each replica's Ray resources (default: 1 CPU).
        name: the deployment's name.

    Raises:
        MissingDependencyError: Ray Serve is not installed.
        InputError: ``options.folder`` is set: replicas serve an index; keep it in step with
            ``ragnet index FOLDER --out INDEX`` (each replica picks the update up).
    """
    if options.folder is not None:
        raise InputError("Ray Serve replicas serve an index, not a folder: build it with `ragnet index FOLDER "
                         "--out INDEX` (again after a change; each replica picks the update up) and give "
                         "ServeOptions(index=INDEX)", argument="folder")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise InputError(f"must be a positive number of replicas, got {replicas!r}", argument="replicas")
    serve = _serve()

    def build() -> Any:  # runs in each replica, once
        from ragnet.serve.app import create_app

        replica = serve.get_replica_context().replica_id.unique_id
        return _Named(create_app(options, lm=make_lm() if make_lm is not None else None), replica)

    # Ray sends a replica no more questions than it holds (its slots and its queue); the rest wait in Ray
    deployment = serve.deployment(serve.ingress(build)(), name=name, num_replicas=replicas,
                                  max_ongoing_requests=options.concurrency + options.queue,
                                  ray_actor_options=ray_actor_options or {"num_cpus": 1})
    return deployment.bind()
