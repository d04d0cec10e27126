"""``ragnet serve``: answer questions over an index, or a folder kept indexed, by HTTP (:mod:`ragnet.serve`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List, Optional

import typer

from ragnet._printable import printable_name
from ragnet.cli.common import api_base_option, answer_lm_option, existing_index, lm_option, say
from ragnet.errors import InputError


def serve(
    folder: Optional[Path] = typer.Argument(None, help="A folder of documents to serve: indexed on the first start (in $RAGNET_HOME/served, or at --index), brought up to date on the next, watched while serving (a change is indexed and swapped in between requests)."),
    index_dir: Optional[Path] = typer.Option(None, "--index", "-i", help="Index directory built by `ragnet index` (alone: served as it is); with FOLDER, where the folder's index is kept."),
    host: str = typer.Option("127.0.0.1", help="Address to bind: 127.0.0.1 answers this machine only; 0.0.0.0 every network (give --api-key-env then)."),
    port: int = typer.Option(8000, help="TCP port."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="Environment variable holding the key every client must send as 'Authorization: Bearer KEY' (not /health or the page itself)."),
    strategy: str = typer.Option("auto", help="Strategy of model 'ragnet-auto' and of /ask without one (auto: ragnet's recommendation for the reader)."),
    timeout: float = typer.Option(120.0, help="Seconds a question may take, waiting included; then 504 and the question stops (a local LM call under way within a prompt slice or a token). Also each LM call's limit."),
    concurrency: int = typer.Option(1, help="Questions answered at once (1 for a local model: llama.cpp runs one call at a time)."),
    queue: int = typer.Option(32, help="Questions that may wait for a slot; one more gets 503 at once."),
    max_body_bytes: int = typer.Option(64_000, help="Largest request body (413 beyond)."),
    max_question_chars: int = typer.Option(4_000, help="Longest question (413 beyond)."),
    reload_every: float = typer.Option(2.0, help="Seconds between checks for an updated index (`ragnet index` again); 0: only POST /reload or SIGHUP."),
    lm: Optional[str] = lm_option(),
    answer_lm: Optional[str] = answer_lm_option("auto"),
    api_base: Optional[str] = api_base_option(),
    lm_api_key_env: Optional[str] = typer.Option(None, "--lm-api-key-env", help="Environment variable holding the key of the LM's server (--lm openai/... --api-base ...)."),
    allowed_host: Optional[List[str]] = typer.Option(
        None, "--allowed-host", help="Another name clients may reach this server by (repeatable): a reverse proxy's "
                                     "host. Besides the bound address and localhost, other Host headers get 421, and "
                                     "POSTs from pages of other origins 403; '*' allows any."),
    read_timeout: float = typer.Option(10.0, help="Seconds a client has to send a request's headers, and again its "
                                                  "body; then the connection is closed."),
    docs: Optional[List[Path]] = typer.Option(
        None, "--docs", help="A folder the index was built from (repeatable; the paths given to `ragnet index`): its "
                             "indexed files are served at /files/PATH, behind the key, and every citation links to its "
                             "place (a PDF's page, the quoted sentence). Without it no file is served."),
    watch: str = typer.Option("auto", help="How FOLDER is watched: auto (the watchdog package's events, else "
                                           "polling), watchdog, poll (network or FUSE folders), off."),
    watch_every: float = typer.Option(2.0, help="Seconds between two looks at FOLDER when polling."),
) -> None:
    """Serve a folder of documents, or an index, over HTTP: OpenAI-compatible /v1/chat/completions,
    /ask, /search, /health, /library and a web page.

    `ragnet serve ~/manuals` indexes the folder (only changed files after the first time; a file
    that cannot be read is left out and listed, never stops it), watches it and swaps each update
    in between requests. The index and the LMs load once; `ragnet index` on the served index while
    it runs is picked up between requests (or at POST /reload, or on SIGHUP).

    Exit status: 2 bad input, a port in use included (one line naming it).
    """
    import uvicorn

    from ragnet.lm.config import LMOptions
    from ragnet.serve import ServeOptions, create_app
    from ragnet.serve.folder import served_paths
    from ragnet.serve.listen import bind, server_config

    paths = served_paths(folder, index_dir)  # one line for a missing folder, or an index given twice
    if paths.note:
        say(paths.note)
    index_dir = paths.index if paths.folder else existing_index(paths.index)  # a set-aside index put back
    key = _server_key(api_key_env)
    lms = LMOptions(lm=lm, answer_lm=answer_lm, api_base=api_base, api_key_env=lm_api_key_env, timeout=timeout)
    options = ServeOptions(index=index_dir, host=host, port=port, api_key=key, lm=lms, strategy=strategy,
                           timeout=timeout, concurrency=concurrency, queue=queue, max_body_bytes=max_body_bytes,
                           max_question_chars=max_question_chars, reload_every=reload_every,
                           allowed_hosts=tuple(allowed_host or ()), read_timeout=read_timeout, docs=tuple(docs or ()),
                           folder=paths.folder, watch=watch, watch_every=watch_every)
    sockets = bind(host, port)  # a port in use: one line and exit 2, before the index loads
    try:
        app = create_app(options, library=_first_sync(options))
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    inner = getattr(app, "app", app)
    snap, health_spec = inner.state.holder.current, inner.state.answerer.resolve(None, None)
    if host not in ("127.0.0.1", "localhost", "::1") and key is None:
        say(f"warning: serving on {host} with no API key: anyone who can reach this port can ask (give --api-key-env)")
    served = f"folder {printable_name(paths.folder)}, index {printable_name(index_dir)}" if paths.folder \
        else f"index {printable_name(index_dir)}"
    say(f"ragnet serve: http://{host}:{port}/  ({served}: {len(snap.index):,} chunks; "
        f"strategy {health_spec[0]}{f' at {health_spec[1]:,} tokens' if health_spec[1] else ''})")
    config = server_config(app, host, port, read_timeout, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=sockets)


def _first_sync(options: Any) -> Any:
    """The served folder's :class:`~ragnet.serve.library.Library`, its first sync run here with
    progress shown (what `ragnet index FOLDER --out INDEX` shows); None when serving an index."""
    from ragnet.index.manifest import index_files
    from ragnet.serve.library import Library

    if options.folder is None:
        return None
    library = Library(options.folder, options.index, on_line=lambda line: say(f"ragnet serve: {line}"))
    folder, index = printable_name(options.folder), printable_name(options.index)
    say(f"ragnet serve: updating the index of {folder} (files added or changed since it was built are read)"
        if index_files(Path(options.index)) is not None else f"ragnet serve: indexing {folder} into {index}")
    report = library.open(show_progress=True)
    if report is not None and not report.written:
        say(f"ragnet serve: {printable_name(options.folder.name)}: {report.unchanged:,} files, unchanged since the last start")
    return library


def _server_key(api_key_env: str | None) -> str | None:
    """The key clients must send (``--api-key-env``), remembered so that no reply or log shows it."""
    from ragnet._secrets import remember

    if api_key_env is None:
        return None
    key = os.environ.get(api_key_env)
    if not key:
        raise InputError(f"environment variable {api_key_env} is not set or empty", argument="api-key-env")
    remember(key)
    return key


def register(app: typer.Typer) -> None:
    """``ragnet serve``."""
    app.command("serve")(serve)
