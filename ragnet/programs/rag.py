"""``ragnet.RAG``: the recommended program for an index and an LM, resolved as ``ragnet ask`` does.

The strategy classes (``OneShotRAG``, ``IterativeRAG``, ...) are the building blocks; their
defaults are their studies' settings. ``RAG`` is what a user starts from: it picks the reader the
way ``ask`` does (the 1.5B local model when the steps run on the default local model and it is on
disk), resolves ``"auto"`` or a named strategy for that reader (:func:`resolve_strategy`: a small
local reader answers from 1,000 tokens of selected sentences, whatever strategy gathered them),
and builds the program from its spec. So ``RAG(index)("...")`` answers with the program
``ragnet ask`` would run, and its prediction's ``strategy`` names it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragnet.errors import InputError
from ragnet.programs.base import RAGProgram


def RAG(  # noqa: N802 - named like the programs it builds: called as a constructor
    index: Any,
    lm: Any = None,
    *,
    strategy: str = "auto",
    budget: int | None = None,
    answer_lm: Any = "auto",
    program: str | Path | None = None,
    **lm_options: Any,
) -> RAGProgram:
    """The program ``ragnet ask`` runs, as a ``dspy.Module``.

    Args:
        index: a ``ragnet.Index``, or the folder of one (``ragnet index``'s ``--out``); ``index.scoped("guide.pdf")``
            answers from some of its files only.
        lm: the LM of the steps (an LM spec such as ``"local"`` or ``"openai/gpt-4o-mini"``, or a
            ``dspy.BaseLM``), installed with :func:`ragnet.configure` and ``lm_options`` (``api_base``,
            ``api_key``, ``timeout``, ...). None keeps the LM already configured with
            ``ragnet.configure`` / ``dspy.configure``, else configures ``$RAGNET_LM`` (default
            ``"local"``), as ``ask`` does.
        strategy: ``"auto"`` (ragnet's recommendation for the reader) or any spec ``ask
            --strategy`` takes (``"iterative"``, ``"oneshot:sentences+hops+cot"``, ...).
        budget: answer-prompt tokens; None takes the reader's default (1,000 for a small local
            reader, the strategy's own otherwise). Given, the strategy runs exactly as named.
        answer_lm: the reader: ``"auto"`` (ragnet's default reader for ``lm``), None (``lm``
            answers too), or an LM spec / ``dspy.BaseLM``.
        program: a compiled program JSON from ``ragnet optimize`` to load into it.

    Returns:
        The program; ``program.spec`` and every prediction's ``strategy`` say what runs
        (``"oneshot:sentences+hops@1000"``).

    Example:
        >>> rag = ragnet.RAG("idx", lm="local")                        # doctest: +SKIP
        >>> pred = rag(question="What is the default depth?")           # doctest: +SKIP
        >>> pred.answer, pred.citations[0]["title"], pred.strategy      # doctest: +SKIP
        ('3000', 'xsltproc › Options', 'oneshot:sentences+hops@1000')
    """
    import dspy

    from ragnet.lm.config import LazyLM, configure, resolve_answer_lm
    from ragnet.programs.persist import load_program
    from ragnet.programs.registry import build_program, resolve_strategy

    if isinstance(index, (str, Path)):
        from ragnet.index import Index

        index = Index.load(index)
    if not isinstance(strategy, str) or not strategy.strip():
        raise InputError("must be a strategy spec such as 'auto' or 'oneshot:sentences'", argument="strategy")
    if lm is None and dspy.settings.lm is not None:  # the user's own dspy/ragnet.configure
        if lm_options:
            raise InputError(f"{', '.join(sorted(lm_options))} configure an LM: give them with lm=", argument="lm")
        steps = dspy.settings.lm
    else:  # as ask: the spec (None: $RAGNET_LM, default "local") decides the reader and the strategy
        configured = configure(lm, **lm_options)
        steps = lm if lm is None or isinstance(lm, str) else configured
    reader = resolve_answer_lm(answer_lm, steps)
    if isinstance(reader, str):  # built on first answer, on the steps' connection
        reader = LazyLM(reader, **{k: v for k, v in lm_options.items() if k in ("api_base", "api_key", "timeout")})
    spec, budget = resolve_strategy(strategy, budget, reader if reader is not None else steps, index)
    built = build_program(spec, index, budget=budget, reader=reader)
    if program is not None:
        load_program(built, program)
    return built
