"""What every route of ``ragnet serve`` shares: its options, the index it answers from, the
answerer that queues questions for the LM, and how their failures read as HTTP errors.

Example:
    >>> from dspy.utils import DummyLM
    >>> from ragnet.serve.options import ServeOptions
    >>> service = Service.create(ServeOptions(index=index.path), lm=DummyLM([]))
    >>> service.check_question("  Capital of Italy?  "), service.spec
    ('Capital of Italy?', 'oneshot')
    >>> service.check_question(" ")
    Traceback (most recent call last):
    ...
    ragnet.serve.errors.ApiError: the question is empty
    >>> service.answerer.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import Any, AsyncIterator, Sequence

from ragnet._text import is_blank
from ragnet.errors import LMUnavailableError
from ragnet.serve.answering import Answer, Answerer, Busy, TimedOut
from ragnet.serve.errors import ApiError, public_error
from ragnet.serve.options import ServeOptions

__all__ = ["MAX_ONLY", "MAX_PATTERN_CHARS", "Service", "cited", "public_error", "unless_gone"]

#: Most patterns one request may scope a question with (``only``).
MAX_ONLY = 32
#: Longest ``only`` pattern (fnmatch's translation is quadratic in a pattern's length).
MAX_PATTERN_CHARS = 512

log = logging.getLogger("ragnet.serve")


def cited(prediction: Any, links: Any = None) -> list[dict[str, Any]]:
    """A prediction's citations, each with its one-line ``source`` (title, file, page, section)
    and, when the server sends its files (``links``, a :class:`ragnet.serve.links.LinkSigner`),
    the ``url`` that opens it at its place (:func:`ragnet.serve.links.file_url`)."""
    from ragnet.programs.citations import source_line
    from ragnet.serve.links import file_url

    out = []
    for c in prediction.citations or []:
        cite = {**c, "source": source_line(c)}
        url = file_url(cite, links)
        out.append(cite if url is None else {**cite, "url": url})
    return out


def _check_text(text: str, param: str) -> None:
    """ApiError 400 when ``text`` holds a lone surrogate (JSON's ``"\\ud800"``): not text, and
    nothing downstream could encode it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, f"{param} is not valid text (it holds a lone UTF-16 surrogate)", "invalid_text",
                       param=param) from None


async def unless_gone(request: Any, work: Any) -> Any:
    """Await ``work`` (a coroutine) unless the client of ``request`` goes away first: then it is
    cancelled (a question stops at its next token, LM call or step, and its slot is free again,
    as a streamed answer's is when its client leaves) and ApiError 499 is raised, answered to
    nobody. The request's body must have been read."""
    task = asyncio.ensure_future(work)

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watch = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, watch):
            if not pending.done():
                pending.cancel()
    if task.done() and not task.cancelled():
        return task.result()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise ApiError(499, "the client closed the request; the question was stopped", "client_closed")


def _api_error(exc: Exception) -> ApiError:
    if isinstance(exc, Busy):
        return ApiError(503, str(exc), "server_busy", "server_error", headers={"Retry-After": "5"})
    if isinstance(exc, TimedOut):
        return ApiError(504, str(exc), "timeout", "server_error")
    return ApiError(503, f"the LM is unavailable: {exc}", "lm_unavailable", "server_error")


class Service:
    """The state of one server.

    Args:
        options: the server's settings.
        answerer: answers questions over ``holder``'s index.
        holder: the index (:class:`ragnet.serve.state.IndexHolder`).
        library: the folder the index is kept in step with (:class:`ragnet.serve.library.Library`),
            or None when the server answers from an index as it is.

    ``links`` signs the links citations give to their files (None: the server sends no files:
    ``options.docs`` is empty and no folder is served).
    """

    def __init__(self, options: ServeOptions, answerer: Answerer, holder: Any, library: Any = None) -> None:
        from ragnet.serve.links import LinkSigner

        self.options, self.answerer, self.holder, self.library = options, answerer, holder, library
        self.links = LinkSigner(options.api_key) if options.served_docs() else None
        self.spec, self.budget = answerer.resolve(None, None)  # a bad --strategy fails here

    @classmethod
    def create(cls, options: ServeOptions, *, lm: Any = None, reader: Any = None, holder: Any = None,
               library: Any = None) -> "Service":
        """Sync the folder (``options.folder``: its first sync unless ``library`` ran it), load the
        index and set the LMs up (see :func:`ragnet.serve.app.create_app`)."""
        from ragnet.serve.state import IndexHolder

        if library is None and options.folder is not None:
            from ragnet.serve.library import Library

            library = Library(options.folder, options.index)
        if library is not None and library.seen is None:
            library.open()
        holder = holder or IndexHolder(options.index)
        step_lm = lm
        if lm is None:
            from ragnet.lm.config import LMOptions

            lms = options.lm or LMOptions(timeout=options.timeout)
            lms.connection()
            lms.configure()
            reader = lms.reader_lm()
            auto_for = reader if reader is not None else lms.lm
        else:
            auto_for = reader if reader is not None else lm
        answerer = Answerer(holder, reader=reader, step_lm=step_lm, strategy=options.strategy,
                            concurrency=options.concurrency, queue=options.queue, timeout=options.timeout,
                            auto_for=auto_for)
        return cls(options, answerer, holder, library)

    # -- requests ----------------------------------------------------------------------------
    def check_question(self, question: str) -> str:
        """The question stripped; ApiError 400 when it is empty or not text (a lone surrogate,
        which no UTF-8 encodes), 413 when it is too long."""
        _check_text(question, "question")
        question = question.strip()
        if not question or is_blank(question):
            raise ApiError(400, "the question is empty", "empty_question", param="question")
        limit = self.options.max_question_chars
        if len(question) > limit:
            raise ApiError(413, f"the question has {len(question):,} characters, more than the {limit:,} allowed "
                                "(ragnet serve --max-question-chars)", "question_too_long", param="question")
        return question

    async def check_only(self, only: list[str] | None, param: str = "only") -> None:
        """Refuse a scope of more than :data:`MAX_ONLY` patterns, one longer than
        :data:`MAX_PATTERN_CHARS` or not text (ApiError 400), or one that names no file
        (``InputError``); its patterns are compiled in a worker thread, never on the event loop."""
        if not only:
            return
        if len(only) > MAX_ONLY:
            raise ApiError(400, f"{len(only)} 'only' patterns, more than the {MAX_ONLY} allowed", "only_too_long",
                           param=param)
        for pattern in only:
            _check_text(pattern, param)
            if len(pattern) > MAX_PATTERN_CHARS:
                raise ApiError(400, f"an 'only' pattern has {len(pattern):,} characters, more than the "
                                    f"{MAX_PATTERN_CHARS} allowed", "pattern_too_long", param=param)
        await self.answerer.check_scope(only)

    async def answer(self, question: str, strategy: str | None, budget: int | None,
                     only: list[str] | None = None, history: Sequence[Any] = ()) -> Answer:
        """The answer (over the files ``only`` names; a follow-up of the earlier turns ``history``),
        or the ApiError of a busy server, a timeout or a failed LM."""
        await self.check_only(only)
        try:
            result = await self.answerer.answer(question, strategy, budget, only=only, history=history)
        except (Busy, TimedOut, LMUnavailableError) as exc:
            raise _api_error(exc) from None
        return self._answered(result)

    async def stream(self, question: str, strategy: str | None, only: list[str] | None = None,
                     history: Sequence[Any] = ()) -> AsyncIterator[str | None | Answer]:
        """:meth:`ragnet.serve.answering.Answerer.stream` with its failures as ApiErrors; a busy
        server and a bad scope raise here, before the first item."""
        await self.check_only(only)
        try:
            items = self.answerer.stream(question, strategy, only=only, history=history)
        except Busy as exc:
            raise _api_error(exc) from None
        return self._checked(items)

    async def _checked(self, items: AsyncIterator[Any]) -> AsyncIterator[str | None | Answer]:
        async with contextlib.aclosing(items):
            try:
                async for item in items:
                    yield self._answered(item) if isinstance(item, Answer) else item
            except (TimedOut, LMUnavailableError) as exc:
                raise _api_error(exc) from None

    @staticmethod
    def _answered(result: Answer) -> Answer:
        from ragnet.lm.failures import answer_failure

        failure = answer_failure(result.prediction.trace)
        if failure:
            raise ApiError(503, f"no answer: {failure}", "lm_failed", "server_error")
        return result

    # -- the index ---------------------------------------------------------------------------
    async def reload(self, force: bool) -> Any:
        """Load the index folder again (if it changed, or ``force``) and serve the new version;
        on failure the current one keeps serving and the error is raised. Forced (``POST /reload``,
        SIGHUP), a served folder is synced first (a failure is recorded in the library's status,
        and the index as it is reloaded)."""
        holder = self.holder
        if self.library is not None and force:
            await asyncio.to_thread(self.library.sync)
        try:
            snap = await asyncio.to_thread(holder.reload, force)
            log.info("index %s: generation %d, %d chunks", holder.path, snap.generation, len(snap.index))
            return snap
        except Exception as exc:  # noqa: BLE001 - the current index keeps serving
            log.warning("index %s could not be reloaded (%s); still serving generation %d", holder.path, exc,
                        holder.current.generation)
            raise

    async def _watch(self) -> None:
        while self.options.reload_every > 0:
            await asyncio.sleep(self.options.reload_every)
            if self.holder.changed():
                with contextlib.suppress(Exception):  # logged; the current index keeps serving
                    await self.reload(force=False)

    async def _quiet_reload(self) -> None:
        with contextlib.suppress(Exception):
            await self.reload(force=True)

    def _folder_changed(self) -> None:
        """After a change of the served folder (in the watch's thread, never the event loop):
        sync its index, and swap a new version in at once (a request under way keeps its own)."""
        report = self.library.sync()
        if report is None or not report.written:
            return
        try:
            snap = self.holder.reload()
            log.info("folder %s: generation %d, %d chunks", self.library.folder, snap.generation, len(snap.index))
        except Exception as exc:  # noqa: BLE001 - recorded by the holder; the current index keeps serving
            log.warning("index %s could not be reloaded (%s); still serving generation %d", self.holder.path, exc,
                        self.holder.current.generation)

    def _start_watch(self) -> Any:
        """The watch of the served folder (:mod:`ragnet.serve.watch`), started; None without one."""
        from ragnet.serve.watch import FolderWatch

        library = self.library
        if library is None:
            return None
        watch = FolderWatch(library.folder, self._folder_changed, mode=self.options.watch,
                            every=self.options.watch_every, ignore=[library.index])
        library.watching = watch.start(library.seen)
        return watch

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While the server runs: the index folder is watched (``reload_every``), a served folder
        too (a change syncs its index), and SIGHUP reloads it; at the end the answerer stops taking
        questions."""
        watch = self._start_watch()
        task = asyncio.create_task(self._watch())
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread: no signals
            loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self._quiet_reload()))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGHUP)
            if watch is not None:
                await asyncio.to_thread(watch.stop)
            self.answerer.close()
