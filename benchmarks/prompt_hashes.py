"""SHA-256 of every LM prompt the one-call strategies send, without an LM: the check that a
refactor left behaviour unchanged.

``basic``, ``oneshot:sentences+hops`` and ``router`` (on its LM-free routes) make one LM call a
question, the answer; everything before it (search, packing, bridge hops, routing, rendering)
is ragnet's own code. A recording engine stands in for the reader: it keeps each prompt and
answers with a fixed JSON reply, so the prompts are exactly what the local reader would get (same
adapter, same budget measure) and hashing them before and after a change shows whether any
prompt moved.

    python -m benchmarks.prompt_hashes --data hotpotqa_dev_distractor -n 30 --out before.json
    python -m benchmarks.prompt_hashes --data hotpotqa_dev_distractor -n 30 --compare before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

from ragnet._atomic import atomic_path

STRATEGIES = ("basic", "oneshot:sentences+hops", "router")
BUDGET = 1000
REPLY = json.dumps({"answer": "unknown", "evidence_ids": ["c1"]})


class PromptRecorder:
    """A DSPy 3.4 engine that records every request's messages and answers ``REPLY``."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, request: Any) -> Response:
        # the system prompt carries the signature's instructions: a refactor that changed them moves the hash
        system = request.system if isinstance(request.system, str) or request.system is None \
            else "".join(getattr(part, "text", "") or "" for part in request.system)
        messages = [{"role": "system", "text": system}] if system else []
        messages += [{"role": str(getattr(m, "role", "")), "text": m.text or ""} for m in request.messages]
        self.prompts.append(json.dumps(messages, ensure_ascii=False))
        return Response(id=None, model="llamacpp/prompt-recorder", message=Message.assistant([TextPart(REPLY)]),
                        finish_reason="stop", usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0))

    def close(self) -> None:
        pass

    def lm(self) -> dspy.LM:
        # "llamacpp/…": ragnet lays prompts out for its local engine (JSON adapter), as the reader gets them
        return dspy.LM("llamacpp/prompt-recorder", engine=self, cache=False, num_retries=0)


def prompt_hashes(data: str, n: int, strategies: tuple[str, ...] = STRATEGIES, *,
                  data_dir: str | None = None) -> dict[str, dict[str, list[str]]]:
    """``{strategy: {question id: [sha256 of each prompt, in order]}}`` for the first ``n`` dev
    questions of ``data`` over its pooled index."""
    from ragnet.eval.run.datasets import load_eval_set
    from ragnet.eval.run.eval_indexes import pooled_index
    from ragnet.lm.config import resolve_adapter
    from ragnet.programs.registry import BUDGETED, build_program, parse_spec

    ev = load_eval_set(data, data_dir=data_dir, split="dev", n=n, mode="pooled")
    index = pooled_index(ev, log=lambda msg: print(msg, file=sys.stderr))
    recorder = PromptRecorder()
    lm = recorder.lm()
    out: dict[str, dict[str, list[str]]] = {}
    with dspy.context(lm=lm, adapter=resolve_adapter("auto", lm)):
        for spec in strategies:
            budget = BUDGET if parse_spec(spec)[0] in BUDGETED else None
            program = build_program(spec, index, budget=budget)
            out[spec] = {}
            for q in ev.questions:
                start = len(recorder.prompts)
                program(question=q.question)
                out[spec][q.id] = [hashlib.sha256(p.encode()).hexdigest() for p in recorder.prompts[start:]]
    return out


def differences(before: dict, after: dict) -> list[str]:
    """Lines naming each strategy and question whose prompts differ (or that one side lacks)."""
    lines = []
    for spec in sorted(set(before) | set(after)):
        a, b = before.get(spec, {}), after.get(spec, {})
        for qid in sorted(set(a) | set(b)):
            if a.get(qid) != b.get(qid):
                lines.append(f"{spec} {qid}: {len(a.get(qid) or [])} prompt(s) before, {len(b.get(qid) or [])} after, "
                             f"hashes differ")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="benchmark name under the data folder")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("-n", type=int, default=30, help="first N dev questions")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--out", type=Path, help="write the hashes here (JSON)")
    parser.add_argument("--compare", type=Path, help="hashes written before: print what moved, exit 1 if any")
    args = parser.parse_args(argv)
    hashes = prompt_hashes(args.data, args.n, tuple(s.strip() for s in args.strategies.split(",") if s.strip()),
                           data_dir=args.data_dir)
    total = sum(len(v) for by_q in hashes.values() for v in by_q.values())
    digest = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
    print(f"{args.data}: {total} prompts over {args.n} questions; digest {digest}")
    if args.out:
        with atomic_path(args.out) as tmp:
            tmp.write_text(json.dumps(hashes, indent=1, sort_keys=True))
    if args.compare:
        moved = differences(json.loads(args.compare.read_text()), hashes)
        print("\n".join(moved) if moved else f"identical to {args.compare}")
        return 1 if moved else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
