"""``ragnet ask``: answer one question over an index with one strategy."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from ragnet._printable import printable_json, printable_name
from ragnet.cli.common import ONLY_HELP, console, text_line, with_lm_options

if TYPE_CHECKING:
    from ragnet.lm.config import LMOptions

#: Exit status when the question was answered by a fallback because the LM failed (2 is bad input).
EXIT_LM_FAILED = 3
#: Sentences printed per evidence chunk. A sentence-packed context (the default strategy) shows the
#: reader a few sentences of a chunk, so they all print; a whole chunk of a basic search has many
#: more, and printing them all for every chunk would push the answer off the screen.
QUOTED_SENTENCES = 4


@with_lm_options(answer_lm="auto")
def ask(
    question: str = typer.Argument(..., help="The question."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory built by `ragnet index`."),
    strategy: str = typer.Option(
        "auto", help="auto (ragnet's recommendation for the reader: oneshot:sentences+hops at 1,000 tokens for a local "
                     "model, oneshot at 4,000 otherwise) | basic | oneshot | iterative | reflective | combined | router "
                     "(presets allowed)."),
    budget: Optional[int] = typer.Option(None, help="Token budget of the answer prompt (oneshot, combined, "
                                                    "iterative, reflective, router). Default for a local reader: "
                                                    "1,000 tokens of selected sentences for every one of them; "
                                                    "otherwise 4,000 for oneshot, combined and router, none for "
                                                    "iterative and reflective (they read all they kept). Give it "
                                                    "to run the strategy exactly as named."),
    program_file: Optional[Path] = typer.Option(None, "--program", help="Compiled program JSON from `ragnet optimize`."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole prediction as JSON."),
    show_trace: bool = typer.Option(False, "--trace", help="Print the step-by-step trace (one JSON object per line)."),
    only: Optional[List[str]] = typer.Option(None, "--only", help=ONLY_HELP),
    *,
    lms: LMOptions,
) -> None:
    """Answer a question over an index with one strategy.

    Exit status: 0 answered, 2 bad input, 3 the LM failed and the answer is a fallback
    (the cause is printed on stderr; --json still prints the prediction).
    """
    from ragnet._secrets import redact, redact_logs
    from ragnet.errors import LMUnavailableError
    from ragnet.index import Index
    from ragnet.lm.failures import answer_failure
    from ragnet.programs.persist import load_program
    from ragnet.programs.registry import build_program, resolve_strategy

    lms.connection()  # bad connection options fail before the index loads (and its key is remembered)
    redact_logs()  # a library's warning that quotes the key prints it as ***
    index = Index.load(index_dir)
    if only:
        index = index.scoped(*only)
    lms.configure()
    reader = lms.reader_lm()
    strategy, budget = resolve_strategy(strategy, budget, reader if reader is not None else lms.lm, index)
    program = build_program(strategy, index, budget=budget, reader=reader)
    if program_file is not None:
        load_program(program, program_file)
    try:
        pred = program(question=question)
    except LMUnavailableError as err:  # its text may quote the LM's error, and that the key
        raise LMUnavailableError(redact(str(err))) from None
    failure = answer_failure(pred.trace)
    if as_json:
        typer.echo(redact(printable_json({k: pred[k] for k in pred.keys()}, indent=2, default=str)))
    else:
        _print(pred, show_trace, strategy=strategy, budget=getattr(program, "budget", None), failed=bool(failure),
               files=getattr(index, "files", None))
    if failure:
        typer.secho(f"error: no answer: {redact(failure)}", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=EXIT_LM_FAILED)


def _print(pred, show_trace: bool, *, strategy: str, budget: int | None, failed: bool,
           files: list[str] | None = None) -> None:
    from ragnet.signatures.answer_confidence import confidence_note

    out = console()
    # LM and document text print as given: no markup, no highlighting, no control sequences, no
    # wrapping (text_line); only quoted sentences wrap, under their indent. An answer's own lines
    # are indented under its first, so that none of them passes for the next label.
    out.print(text_line(("answer:", "bold"), " " + str(pred.answer).replace("\n", "\n" + " " * 8)), soft_wrap=True)
    note = confidence_note(getattr(pred, "confidence", None))  # only readers whose LM reports token logprobs
    if note is not None:
        out.print(f"[bold]confidence:[/bold] {note}", highlight=False)
    if failed:  # the fallback's evidence is the whole context, which no answer cited
        out.print(text_line(("evidence:", "bold"), " none (no answer: the LM failed)"))
    else:
        out.print(text_line(("evidence:", "bold")))
        for cite in pred.citations:
            _print_citation(out, cite)
    u = pred.usage
    out.print(
        f"[bold]usage:[/bold] {u['lm_calls']} LM calls ({u['cached_calls']} cached), "
        f"{u['input_tokens']:,} tokens in, {u['output_tokens']:,} out, {u['searches']} searches, "
        f"{len(pred.context)} chunks in context, {u['seconds']:.1f}s"
    )
    out.print(f"[bold]strategy:[/bold] {strategy}" + (f", {budget:,}-token answer budget" if budget else ""),
              highlight=False)
    if files is not None:  # --only: the files every search kept to
        shown = ", ".join(printable_name(f) for f in files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        out.print(text_line(("asked over:", "bold"), f" {shown}"), soft_wrap=True)
    if show_trace:  # plain lines: valid JSON however wide the terminal, piped or not
        for event in pred.trace:
            typer.echo(printable_json(event, default=str))


def _print_citation(out, cite: dict) -> None:
    """One evidence chunk: its id and where it is from, then the sentences of it the reader saw,
    quoted and indented (long ones wrap under their own indent); at most
    :data:`QUOTED_SENTENCES` of them, then how many more (``--json`` has them all)."""
    from rich.padding import Padding

    from ragnet.programs.citations import source_line

    # names on one line: a newline in a file name or an id shows as \n, never as a forged line
    out.print(text_line(f"  {printable_name(cite['id'])}  ", (printable_name(source_line(cite)), "dim")),
              soft_wrap=True)
    sentences = cite.get("sentences") or []
    for sentence in sentences[:QUOTED_SENTENCES]:
        # one line of text per sentence: its line breaks (PDF columns, lists) would break the quote
        out.print(Padding(text_line(f"“{' '.join(sentence.split())}”"), (0, 0, 0, 6), expand=False))
    if len(sentences) > QUOTED_SENTENCES:
        more = len(sentences) - QUOTED_SENTENCES
        out.print(text_line((f"      … and {more} more sentence{'s' if more > 1 else ''} (--json lists them all)",
                             "dim")))


def register(app: typer.Typer) -> None:
    """``ragnet ask``."""
    app.command("ask")(ask)
