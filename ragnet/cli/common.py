"""What every ``ragnet`` command shares: the one error handler, option definitions, output helpers.

Commands only parse arguments and call the library. A :class:`~ragnet.errors.RagnetError`
raised anywhere below a command becomes one red ``error: ...`` line on stderr and its exit
status (2 for bad input) in :class:`RagnetGroup`, the one place that handles it; so does a full
disk, wherever the write that hit it was (exit status 4). :class:`RagnetGroup` also runs every
command with its output filtered (:mod:`ragnet.cli.safe_text`): nothing a document, a file name
or an LM wrote reaches the terminal as a control sequence, and checks the command's text
arguments first (:func:`check_text_arguments`): one that is not valid UTF-8, or a question or
query that shows nothing, is one line naming it (exit 2). A command that opens ``--index`` other
than by ``Index.load`` checks it with :func:`existing_index` first (one line naming the path; an
index a killed update left aside is put back).

Example:
    >>> parse_ints("1000, 2000", "budgets")
    [1000, 2000]
"""

from __future__ import annotations

import functools
import inspect
import logging
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from ragnet._printable import printable
from ragnet._secrets import redact_argv
from ragnet.errors import DiskFullError, InputError, RagnetError, is_disk_full

__all__ = [
    "RagnetGroup",
    "TruncationNotes",
    "command_line",
    "console",
    "data_dir_option",
    "data_option",
    "existing_index",
    "lm_option",
    "new_app",
    "parse_ints",
    "say",
    "split_option",
    "check_text_arguments",
    "text_line",
    "visible",
    "with_lm_options",
]

EXIT_USAGE = 2


class RagnetGroup(TyperGroup):
    """Typer group whose ``invoke`` turns a ``RagnetError`` into one line on stderr and its exit
    status (2 for bad input, 3 when the LM failed, 4 when the disk is full)."""

    def invoke(self, ctx: Any) -> Any:
        from ragnet.cli.safe_text import filtered_output

        with filtered_output():
            return self._invoke(ctx)

    def _invoke(self, ctx: Any) -> Any:
        try:
            self._check_arguments(ctx)
            return super().invoke(ctx)
        except RagnetError as err:
            typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
            raise typer.Exit(code=getattr(err, "exit_code", EXIT_USAGE)) from None
        except (OSError, RuntimeError) as exc:
            if not is_disk_full(exc):
                raise
            # a write outside ragnet's own writers (a cache, a lock file): name what the system names
            full = DiskFullError(getattr(exc, "filename", None) or "the output",
                                 getattr(exc, "strerror", None) or None)
            typer.secho(f"error: {full}", fg=typer.colors.RED, err=True)
            raise typer.Exit(code=full.exit_code) from None


    def _check_arguments(self, ctx: Any) -> None:
        """Refuse a text argument of the command about to run that is not valid UTF-8 or shows
        nothing (:func:`check_text_arguments`), before the command runs; a command group checks
        its own commands."""
        args = [*(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])), *ctx.args]
        if not args or ctx.resilient_parsing or "--help" in args:
            return
        command = self.get_command(ctx, args[0])
        if command is None or isinstance(command, TyperGroup):
            return
        try:
            sub = command.make_context(args[0], list(args[1:]), parent=ctx, resilient_parsing=True)
        except Exception:  # noqa: BLE001 - the real parse that follows reports it
            return
        check_text_arguments(command.params, sub.params)


#: Text arguments that must show something: ``ragnet ask QUESTION``, ``ragnet search QUERY``.
_NON_BLANK = ("question", "query")
#: Text arguments that name files (``ragnet index PATHS``, ``--only``): a file name need not be UTF-8.
_FILE_NAMES = ("paths", "only")


def check_text_arguments(params: list[Any], values: dict[str, Any]) -> None:
    r"""Refuse a text value that is not valid UTF-8 (the shell passed bytes Python could not decode:
    they arrive as lone surrogates, and would fail deep inside with a traceback) and a question or
    query made only of spaces and invisible characters (:func:`ragnet._text.is_blank`). Paths are
    left alone: a file name need not be UTF-8.

    Raises:
        InputError: naming the option or argument.

    Example:
        >>> from types import SimpleNamespace as Param
        >>> check_text_arguments([Param(name="query", opts=["query"], param_type_name="argument")],
        ...                      {"query": "\u200b \u200b"})
        Traceback (most recent call last):
        ...
        ragnet.errors.InputError: argument 'query': is empty (only spaces or invisible characters)
    """
    from ragnet._text import is_blank

    for param in params:
        value = values.get(param.name)
        if isinstance(value, Path) or param.name in _FILE_NAMES:
            continue
        texts = [v for v in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(v, str)]
        opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
        name = (max(opts, key=len) if opts and param.param_type_name == "option" else param.name).lstrip("-")
        for text in texts:
            if any("\ud800" <= ch <= "\udfff" for ch in text):
                raise InputError(f"not valid UTF-8 text ({_undecoded(text)}); give it as UTF-8", argument=name)
            if param.name in _NON_BLANK and is_blank(text):
                raise InputError("is empty (only spaces or invisible characters)", argument=name)


def _undecoded(text: str) -> str:
    r"""``text`` as the bytes it was given as, those that are not UTF-8 shown as ``\xNN``.

    Example:
        >>> print(_undecoded("caf\udcff"))
        caf\xff
    """
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that no undecodable byte made
        data = text.encode("utf-8", "backslashreplace")
    return data.decode("utf-8", "backslashreplace")


def existing_index(path: Path, argument: str = "index") -> Path:
    """The index folder ``--index PATH`` names, checked before anything loads it: its manifest
    read (:func:`ragnet.index.manifest.read_manifest`), and an index that an update killed
    between its two renames left aside put back (:func:`ragnet._atomic.recover_set_aside`).
    Returns the folder to open.

    Raises:
        IndexFormatError: no folder, not an index, another format: one line naming the path.

    Example:
        >>> existing_index(Path("/no/such/index"))
        Traceback (most recent call last):
        ...
        ragnet.errors.IndexFormatError: no index at /no/such/index: the folder does not exist; build one ...
    """
    from ragnet._atomic import recover_set_aside
    from ragnet.index.manifest import read_manifest

    try:
        found = recover_set_aside(path)
        read_manifest(found)
    except OSError as exc:  # an unreadable folder or manifest
        raise InputError(f"cannot read the index ({exc.strerror or exc})", path=path) from None
    return found


def new_app(help: str, **kwargs: Any) -> typer.Typer:
    """A Typer app (the root or a command group) with ragnet's settings."""
    kwargs.setdefault("no_args_is_help", True)
    return typer.Typer(help=help, cls=RagnetGroup, add_completion=False, pretty_exceptions_enable=False, **kwargs)


#: ``--only`` of ``ask`` and ``search``: which of the index's files a question is asked over.
ONLY_HELP = ("Ask only these files (repeatable): a path as indexed (relative to the folder), a file name, a folder or "
             "a glob ('gnu/*.pdf'); every search of the strategy keeps to them.")


def say(message: str) -> None:
    """A progress or notice line on stderr (stdout stays for results)."""
    typer.echo(message, err=True)


def console():
    """A rich console for tables; wide when not a terminal so logs keep whole rows."""
    from rich.console import Console

    out = Console()
    return out if out.is_terminal else Console(width=150)


def text_line(*parts: str | tuple[str, str]) -> Any:
    r"""A line rich prints exactly as given: pieces of text, each plain or ``(text, style)``.

    For LM answers and document text (titles, ids, quoted sentences): rich reads no markup in
    them (a stray ``[/x]`` made it raise) and does not run its highlighter over them (minutes on
    one token of 80,000 characters), and the terminal reads no control sequence in them: control
    characters other than newline and tab print as visible ``\xNN`` escapes (:func:`visible`;
    rich passes an ESC through, so a document could recolour or rewrite the user's terminal).
    Print it with ``soft_wrap=True`` to keep long text unwrapped too.

    Example:
        >>> text_line(("answer:", "bold"), " [b]Paris[/b]").plain
        'answer: [b]Paris[/b]'
        >>> print(text_line("\x1b[31mred").plain)
        \x1b[31mred
    """
    from rich.text import Text

    return Text.assemble(*((visible(p[0]), p[1]) if isinstance(p, tuple) else visible(p) for p in parts))


def visible(text: str) -> str:
    r"""``text`` with its terminal control characters (all but newline and tab) shown as ``\xNN``
    and its bidirectional controls as ``\uNNNN`` (:func:`ragnet._printable.printable`).

    Example:
        >>> print(visible("a\x1b[2Jb\x9b1m\u202e"))
        a\x1b[2Jb\x9b1m\u202e
    """
    return printable(text)


def parse_ints(text: str, argument: str) -> list[int]:
    """``"1000,2000"`` -> ``[1000, 2000]``, or an error naming the argument."""
    try:
        values = [int(part.replace("_", "")) for part in text.replace(" ", ",").split(",") if part.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {text!r}", argument=argument) from None
    if not values:
        raise InputError("no values given", argument=argument)
    return values


def command_line(ctx: typer.Context) -> str:
    """The command as typed (the options the user set, in declaration order), for reports: the
    value of ``--api-key`` and a password in a URL are written ``***`` (:mod:`ragnet._secrets`)."""
    # The root is "ragnet" however it was invoked (`python -m ragnet` names it "python -m ragnet").
    names, node = [], ctx
    while node.parent is not None:
        names.append(node.info_name)
        node = node.parent
    parts = ["ragnet", *reversed(names)]
    for param in ctx.command.params:  # typer vendors click: duck-typed, no isinstance checks
        if getattr(param, "param_type_name", "") != "option" or not param.name or not param.opts:
            continue
        source = ctx.get_parameter_source(param.name)
        if source is None or source.name != "COMMANDLINE":
            continue
        value = ctx.params.get(param.name)
        flag = max(param.opts, key=len)
        if getattr(param, "is_flag", False):
            if value:
                parts.append(flag)
            elif param.secondary_opts:
                parts.append(max(param.secondary_opts, key=len))
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            parts += [flag, shlex.quote(redact_argv([flag, str(v)])[1])]
    return " ".join(parts)


# -- shared options ----------------------------------------------------------------------------
def data_option(default: str = "hotpotqa_dev_distractor") -> Any:
    return typer.Option(default, help="Dataset: a set name under the data dir, a set folder, or your own questions.jsonl.")


def data_dir_option() -> Any:
    return typer.Option(None, help="Benchmark data folder (default ../shared/data or $RAGNET_DATA).")


def split_option(help: str = "Question split: dev (develop and tune here) or acceptance (final measurement only).") -> Any:
    return typer.Option("dev", help=help)


def lm_option() -> Any:
    return typer.Option(None, help="LM: 'local' (default, llama.cpp), local:NAME, or any litellm model id; env RAGNET_LM.")


def answer_lm_option(default: str | None = None) -> Any:
    if default == "auto":  # ask and demo: ragnet's default reader (see ragnet.lm.config.default_answer_lm)
        return typer.Option("auto", "--answer-lm", help="LM of the answer step: auto (the 1.5B local reader when fetched and --lm is the default local model, else --lm), none (--lm), or an LM spec.")
    return typer.Option(default, "--answer-lm", help="LM of the answer step only (e.g. local:qwen2.5-coder-1.5b); the other steps use --lm.")


def api_base_option() -> Any:
    return typer.Option(None, "--api-base", help="Server URL for a litellm LM (an OpenAI-compatible server, Ollama, vLLM), e.g. http://127.0.0.1:8000/v1.")


def api_key_option() -> Any:
    return typer.Option(None, "--api-key", help="API key for a litellm LM; prefer --api-key-env to keep it out of the shell history.")


def api_key_env_option() -> Any:
    return typer.Option(None, "--api-key-env", help="Name of the environment variable that holds the API key.")


def _timeout_value(value: Any) -> Any:
    from ragnet.lm.call_time import check_timeout

    try:
        return check_timeout(value)
    except InputError as exc:
        raise typer.BadParameter(str(exc).removeprefix("argument 'timeout': "), param_hint="--timeout") from None


def timeout_option(default: float | str = "auto") -> Any:
    return typer.Option(default, "--timeout", parser=_timeout_value, metavar="SECONDS|auto",
                        help="Seconds per LM call, or auto: the local model gets 4x what this machine needs for "
                             "the call (at least 120 s), a served one 120 s. With one retry per step, a server "
                             "that hangs costs at most about 2x this per step.")


def with_lm_options(*, answer_lm: str | None | bool = None, timeout: float | str = "auto") -> Callable[[Callable], Callable]:
    """Give a command the LM options, declared here once, and pass them as one ``lms``
    (:class:`ragnet.lm.config.LMOptions`) instead of six parameters.

    Args:
        answer_lm: the ``--answer-lm`` default ("auto" or None), or False for a command
            without a reader option.
        timeout: the ``--timeout`` default: seconds per LM call or ``"auto"``.

    Example:
        >>> @with_lm_options(answer_lm=False, timeout=30.0)
        ... def hello(name: str = "x", *, lms):
        ...     return lms
        >>> [p for p in inspect.signature(hello).parameters][:3]
        ['name', 'lm', 'api_base']
        >>> hello(name="y", lm="openai/gpt-4o", api_base=None, api_key=None, api_key_env=None, timeout=30.0).lm
        'openai/gpt-4o'
    """
    from ragnet.lm.config import LMOptions

    options: list[tuple[str, Any, Any]] = [("lm", Optional[str], lm_option())]
    if answer_lm is not False:
        options.append(("answer_lm", Optional[str], answer_lm_option(answer_lm or None)))
    options += [
        ("api_base", Optional[str], api_base_option()),
        ("api_key", Optional[str], api_key_option()),
        ("api_key_env", Optional[str], api_key_env_option()),
        ("timeout", str, timeout_option(timeout)),
    ]
    names = [name for name, _, _ in options]

    def wrap(func: Callable) -> Callable:
        signature = inspect.signature(func)
        own = [p for p in signature.parameters.values() if p.name != "lms"]

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            return func(*args, lms=LMOptions(**{name: kwargs.pop(name) for name in names}), **kwargs)

        added = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind)
                 for name, kind, default in options]
        command.__signature__ = signature.replace(parameters=[
            *(p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in own), *added])
        # typer reads the annotations too; the wrapped function's own stay as they are
        command.__annotations__ = {**{k: v for k, v in func.__annotations__.items() if k != "lms"},
                                   **{name: kind for name, kind, _ in options}}
        return command

    return wrap


def index_dir_option() -> Optional[Path]:
    return typer.Option(None, "--index", help="Pooled index folder (default: the cached one, built once).")


# -- logging --------------------------------------------------------------------------------------
class TruncationNotes(logging.Filter):
    """Fold DSPy's per-call "LM response was truncated" warning into one count.

    DSPy warns on every answer that stops at ``max_tokens``; the local engine also ends a
    degenerate repetition loop that way on purpose. In long runs (demo, eval, optimize) the
    warning repeated dozens of times between progress lines; the command now prints the count
    once at the end instead. Other DSPy warnings pass through.

    Example:
        >>> notes = TruncationNotes()
        >>> notes.filter(logging.makeLogRecord({"msg": "LM response was truncated; increase max_tokens"}))
        False
        >>> notes.count
        1
    """

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.getMessage()).startswith("LM response was truncated"):
            self.count += 1
            return False
        return True

    def summary(self) -> str | None:
        if not self.count:
            return None
        return (f"note: {self.count} LM answer(s) were cut at max_tokens or by the local engine's "
                "repetition guard (each is parsed as far as it goes; failures are in the traces)")

    def print_summary(self) -> None:
        """Print :meth:`summary` to stderr when there is one (registered with ``atexit``)."""
        text = self.summary()
        if text:
            print(text, file=sys.stderr)
