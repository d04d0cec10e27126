"""Study (2026-12-06, at aae1280): does the 1.5B reader answer manuals better through DSPy's
ChatAdapter (``[[ ## answer ## ]]`` sections) than through the JSONAdapter ragnet gives llama.cpp
models? An answer with quotes or backslashes (``'^$'``, ``--color=never``) has to be escaped in
JSON, and the ChatAdapter's free text needs no escaping.

``run`` is ``ragnet eval`` with the reader (the ``--answer-lm``) on the adapter named by
``--adapter``; every other step keeps its own. ``--summary`` compares the chat rows with `auto`'s
JSON rows of the same commit on the real-document dev set: right answers, the questions either
adapter answers, the surer of the two answers (``pred.confidence``), and a vote of the answers of
several contexts (the committed 800-, 1,500- and 3,000-token, reasoning-first and term-floor rows)
as a ceiling for multi-call picking.

    python -m benchmarks.realdocs.build
    python -m benchmarks.studies.reader_adapter run --adapter chat -- --data benchmarks/realdocs/questions.jsonl \\
        --docs ~/.cache/ragnet/realdocs-dev -n 125 --strategies oneshot:sentences+hops --budget 2000 \\
        --no-judge --no-plots --lm local --answer-lm local:qwen2.5-coder-1.5b \\
        --out docs/results/realdocs-dev-reader-adapter/chat
    python -m benchmarks.studies.reader_adapter summary
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

from benchmarks.studies import parser, result_rows

#: The rows compared: `auto`'s own (JSON) and the chat run, then the other contexts voted over.
JSON_ROWS = "realdocs-dev-confidence"
CHAT_ROWS = "realdocs-dev-reader-adapter/chat"
VIEWS = {"800": "realdocs-dev-confidence/budget-800", "1500": "realdocs-dev-auto-1500",
         "3000": "realdocs-dev-auto-3000", "reasoning": "realdocs-dev-auto-cot", "term floor": "realdocs-dev-term-floor"}


def run(adapter: str, eval_args: Sequence[str]) -> None:
    """``ragnet eval eval_args`` with the reader's prompts built by ``adapter`` ("chat" or "json")."""
    import dspy

    from ragnet.cli import app
    from ragnet.lm import config

    def settings(self):
        return dspy.context(lm=self.lm, adapter=config.resolve_adapter(adapter, self.lm))

    config.LazyLM.settings = settings
    app(["eval", *eval_args])


def _by_id(folder: str, strategy_prefix: str = "oneshot:sentences+hops") -> dict[str, dict]:
    return {r["id"]: r for r in result_rows(folder) if r["strategy"].startswith(strategy_prefix)}


def summary() -> None:
    """Print the comparison (see the module docstring)."""
    from ragnet.core.support import answer_key
    from ragnet.eval.report.summary import row_confidence
    from ragnet.eval.metrics.stats import sign_test

    json_rows, chat_rows = _by_id(JSON_ROWS), _by_id(CHAT_ROWS)
    ids = sorted(set(json_rows) & set(chat_rows))
    right = lambda row: (row.get("contains") or 0) >= 1  # noqa: E731
    wins = sum(right(chat_rows[i]) and not right(json_rows[i]) for i in ids)
    losses = sum(right(json_rows[i]) and not right(chat_rows[i]) for i in ids)
    print(f"{len(ids)} questions: JSON {sum(right(json_rows[i]) for i in ids)}, "
          f"chat {sum(right(chat_rows[i]) for i in ids)} ({wins} wins, {losses} losses, "
          f"sign test p = {sign_test(wins, losses):.2f}); either {sum(right(json_rows[i]) or right(chat_rows[i]) for i in ids)}")
    surer = [chat_rows[i] if (row_confidence(chat_rows[i]) or 0) > (row_confidence(json_rows[i]) or 0) else json_rows[i]
             for i in ids]
    print(f"the surer of the two answers: {sum(map(right, surer))}")

    views = {"JSON": json_rows, "chat": chat_rows, **{name: _by_id(folder) for name, folder in VIEWS.items()}}

    def vote(names: Sequence[str]) -> int:
        """Right answers when the answer two or more views agree on wins, else `auto`'s own."""
        total = 0
        for i in ids:
            rows = [views[n][i] for n in names if i in views[n]]
            keys = Counter(" ".join(answer_key(str(r["answer"]))) for r in rows)
            key, count = keys.most_common(1)[0]
            pick = next(r for r in rows if " ".join(answer_key(str(r["answer"]))) == key) if count > 1 else rows[0]
            total += right(pick)
        return total

    for size in (3, 5, len(views)):
        scored = sorted(((vote(("JSON", *rest)), rest) for rest in itertools.combinations(list(views)[1:], size - 1)),
                        reverse=True)
        print(f"vote of {size} views: best {scored[0][0]} ({', '.join(('JSON', *scored[0][1]))}), worst {scored[-1][0]}")


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__, "reader_adapter")
    commands = cli.add_subparsers(dest="command", required=True)
    ran = commands.add_parser("run", help="ragnet eval with the reader on another adapter")
    ran.add_argument("--adapter", choices=("chat", "json"), default="chat")
    ran.add_argument("eval_args", nargs="*", help="ragnet eval's arguments, after --")
    commands.add_parser("summary", help="compare the chat rows with auto's JSON rows")
    args = cli.parse_args(argv)
    if args.command == "run":
        run(args.adapter, args.eval_args)
    else:
        summary()


if __name__ == "__main__":
    main()
