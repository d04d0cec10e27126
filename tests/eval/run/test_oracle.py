"""The ``oracle`` strategy of ``ragnet eval`` with a real index and a scripted LM: the prompt holds
exactly the gold sentences under their titles; sentences of a pooled set without paragraphs come
from the index; the fallback to gold documents; a question with no gold evidence; the budget;
specs and presets; side by side in the evaluator (rows, summary counts, report, --answer-lm);
``dspy.Evaluate``."""

from __future__ import annotations

import contextlib
import re

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.eval.metrics.program_metrics import program_metric
from ragnet.eval.run.datasets import QARecord, pooled_documents, to_examples
from ragnet.eval.run.eval_settings import EvalSettings
from ragnet.eval.run.oracle import OracleRAG, build_oracle, gold_context, oracle_layout, parse_oracle_spec
from ragnet.eval.run.qa_evaluator import QAEvaluator
from ragnet.eval.run.strategy_plan import parse_program_args, plan_strategies
from ragnet.index import Index
from ragnet.programs.packing import PromptBudget
from ragnet.signatures.formatting import format_context, render_chunk
from tests.programs.scripted import ProgramLM

FILM, ACTRESS, CITY = "Kiss and Tell (1945 film)", "Shirley Temple", "Oslo"
SENTENCES = {
    FILM: ["Kiss and Tell is a 1945 American comedy film starring Shirley Temple as Corliss Archer.",
           " In the film, two teenage girls cause their parents much concern.",
           " It was directed by Richard Wallace."],
    ACTRESS: ["Shirley Temple Black was an American actress.",
              " She began her film career in 1932.",
              " As an adult, she served as Chief of Protocol of the United States."],
    CITY: ["Oslo is the capital of Norway.", " It is cold in winter."],
}
CONTEXT = [{"title": t, "text": "".join(s), "sentences": s} for t, s in SENTENCES.items()]
QUESTION = "What government position was held by the woman who portrayed Corliss Archer in Kiss and Tell?"


def _record(qid="q1", question=QUESTION, *, gold_sentences=None, gold_titles=(FILM, ACTRESS), context=CONTEXT):
    return QARecord(id=qid, question=question, answers=["Chief of Protocol"], gold_titles=list(gold_titles),
                    gold_sentences=gold_sentences, context=context)


BRIDGE = _record(gold_sentences=[[FILM, 0], [ACTRESS, 0], [ACTRESS, 2]])


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return Index.build(pooled_documents([BRIDGE]), tmp_path_factory.mktemp("idx") / "oracle", show_progress=False)


@contextlib.contextmanager
def scripted(**responders):
    engine = ProgramLM(**responders)
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        yield engine


def _context_shown(prompt: str) -> str:
    """The context field of the last message (the system message only names the field)."""
    return re.findall(r"\[\[ ## context ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", prompt, re.S)[-1].strip()


def _ask(index, record, *, gold=None, **kwargs):
    with scripted() as engine:
        pred = OracleRAG(index, gold or [record], **kwargs)(question=record.question)
    prompts = [p for step, p in engine.calls if step == "answer"]
    return pred, prompts


def _event(pred, step):
    return [e for e in pred.trace if e.get("step") == step]


def test_prompt_holds_exactly_the_gold_sentences_under_their_titles(index):
    pred, prompts = _ask(index, BRIDGE, budget=1000)
    assert pred.oracle == "sentences" and len(prompts) == 1 and pred.usage["lm_calls"] == 1
    film, actress = SENTENCES[FILM], SENTENCES[ACTRESS]
    expected = format_context([
        {"id": "a", "title": FILM, "text": film[0]},
        # two sentences of one paragraph that are not adjacent: the one-shot's gap mark between them
        {"id": "b", "title": ACTRESS, "text": actress[0] + " … " + actress[2].strip()},
    ])[0]
    assert _context_shown(prompts[0]) == expected
    for other in (film[1], film[2], actress[1], SENTENCES[CITY][0]):
        assert other.strip() not in prompts[0]
    # the blocks keep the ids of the index chunks that hold them: gold recall is scored as for any strategy
    assert pred.context == [f"{FILM}#0", f"{ACTRESS}#0"] and pred.usage["searches"] == 0
    (oracle,) = _event(pred, "oracle")
    assert [(s["title"], s["index"], s["from"]) for s in oracle["sentences"]] == [
        (FILM, 0, "dataset"), (ACTRESS, 0, "dataset"), (ACTRESS, 2, "dataset")]


def test_citations_quote_the_gold_sentences_not_the_gap_mark(index):
    with scripted(answer=lambda p, n: {"answer": "Chief of Protocol", "evidence_ids": ["c1", "c2"]}):
        pred = OracleRAG(index, [BRIDGE], budget=1000)(question=BRIDGE.question)
    cites = {c["title"]: c["sentences"] for c in pred.citations}
    # the answer is stated in the actress's gold sentences only, so only they are cited, that sentence first
    assert list(cites) == [ACTRESS], pred.citations
    assert cites[ACTRESS] == [SENTENCES[ACTRESS][2].strip(), SENTENCES[ACTRESS][0]]
    assert not any("…" in s for sentences in cites.values() for s in sentences)


def test_pooled_record_without_paragraphs_reads_its_sentences_from_the_index(index):
    # 2Wiki pooled: gold sentences, no paragraphs (context null), the corpus holds the documents
    record = _record(gold_sentences=[[ACTRESS, 2]], gold_titles=[ACTRESS], context=None)
    pred, prompts = _ask(index, record)
    assert pred.oracle == "sentences"
    assert _context_shown(prompts[0]) == render_chunk("c1", ACTRESS, SENTENCES[ACTRESS][2].strip())
    assert _event(pred, "oracle")[0]["sentences"][0]["from"] == "split"


def test_a_document_of_several_chunks_is_joined_back_to_find_its_sentence(tmp_path):
    from ragnet.corpus.types import Document

    sentences = [f"Sentence {i} of the long page tells fact number {i} about the river Wyre." for i in range(12)]
    text = " ".join(sentences)
    index = Index.build([Document(id="Long page", title="Long page", text=text)], tmp_path / "long",
                        chunk_tokens=48, overlap=12, show_progress=False)
    chunks = sorted(index.chunks, key=lambda c: c.position)
    assert len(chunks) > 3  # overlapping windows: the document is not any one chunk's text
    record = _record(question="Which fact does sentence nine of the long page tell?", gold_titles=["Long page"],
                     gold_sentences=[["Long page", 9]], context=None)
    pred, prompts = _ask(index, record)
    assert pred.oracle == "sentences"
    holder = next(c.id for c in chunks if sentences[9] in c.text)
    assert pred.context == [holder] and holder != "Long page#0"
    assert _context_shown(prompts[0]) == render_chunk("c1", "Long page", sentences[9])


@pytest.mark.parametrize("gold_sentences, why", [
    (None, "no_sentences"),                       # NQ, 2Wiki pooled rows with gold_sentences: null
    ([[FILM, 0], [ACTRESS, 7]], "sentences_missing"),  # one sentence not found: the whole question falls back
])
def test_falls_back_to_the_gold_documents(index, gold_sentences, why):
    record = _record(gold_sentences=gold_sentences)
    pred, prompts = _ask(index, record)
    assert pred.oracle == "documents"
    shown = _context_shown(prompts[0])
    assert shown == format_context([{"id": t, "title": t, "text": "".join(SENTENCES[t])} for t in (FILM, ACTRESS)])[0]
    assert SENTENCES[CITY][0] not in prompts[0]
    (oracle,) = _event(pred, "oracle")
    assert oracle["documents"] == [FILM, ACTRESS] and why in oracle
    if why == "sentences_missing":
        assert "no sentence 7" in oracle["sentences_missing"][0]


def test_a_question_without_gold_evidence_is_answered_by_nothing(index):
    record = _record(gold_titles=["Atlantis"], context=None)
    pred, prompts = _ask(index, record)
    assert prompts == [] and pred.answer == "" and pred.context == [] and pred.oracle == "none"
    assert "Atlantis" in _event(pred, "oracle")[0]["no_documents"]
    assert gold_context(_record(gold_titles=[], context=None), index).mode == "none"


def test_gold_documents_fill_the_budget_in_gold_order(index):
    record = _record()
    program = OracleRAG(index, [record])
    with scripted():
        fixed = PromptBudget(program.answer.predict, QUESTION, 10_000,
                             signature=program.answer.signature_for(QUESTION))
        first = int(fixed.chunk_costs([index.chunk(f"{FILM}#0")])[0])
    pred, prompts = _ask(index, record, budget=fixed.overhead + first + 5)
    assert pred.context == [f"{FILM}#0"] and SENTENCES[ACTRESS][0] not in prompts[0]
    assert _event(pred, "oracle")[0]["over_budget"] == [f"{ACTRESS}#0"]


def test_specs_take_the_answer_presets_only():
    assert parse_oracle_spec("oracle:qlast+cot") == ("oracle", {"question_at": "last", "reasoning": True})
    assert oracle_layout("oracle") == {"question_at": "auto", "reasoning": False, "evidence_order": "auto"}  # as the one-shot's
    assert [r.label for r in plan_strategies(["oracle", "basic", "oracle:qlast"], budgets=[500, 1000])] == [
        "oracle@500", "oracle@1000", "basic", "oracle:qlast@500", "oracle:qlast@1000"]
    with pytest.raises(InputError, match="the oracle takes the answer presets only: cot, qfirst"):
        plan_strategies(["oracle:sentences"])
    with pytest.raises(InputError, match="set question_at to 'first' and 'last'"):
        plan_strategies(["oracle:qfirst+qlast"])


def test_a_program_compiled_for_another_strategy_is_refused(index, tmp_path):
    from ragnet.programs import OneShotRAG
    from ragnet.programs.persist import save_program

    path = save_program(OneShotRAG(index), tmp_path / "oneshot.json")
    with pytest.raises(InputError, match="compiled for OneShotRAG, not OracleRAG"):
        parse_program_args([f"oracle={path}"], ["oracle", "basic"])


def test_questions_it_has_no_gold_for_are_refused(index):
    twin = _record("q2", gold_sentences=[[FILM, 1]])
    with scripted():
        with pytest.raises(InputError, match="no gold labels for 'Who\\?'"):
            OracleRAG(index, [BRIDGE])(question="Who?")
        with pytest.raises(InputError, match="several gold records with different gold labels"):
            OracleRAG(index, [BRIDGE, twin])(question=QUESTION)
    with pytest.raises(InputError, match="argument 'gold'"):
        OracleRAG(index, [])


def _evaluate(index, strategies, records, **kwargs):
    evaluator = QAEvaluator(records, strategies, index=index, log=lambda _: None,
                            settings=EvalSettings(judge=False, plots=False, show_progress=False, **kwargs))
    return evaluator, evaluator()


def test_runs_beside_the_other_strategies_and_counts_its_modes(index, tmp_path):
    records = [BRIDGE, _record("q2", "Who played Corliss Archer in Kiss and Tell?", gold_titles=[FILM]),
               _record("q3", "Where is Atlantis?", gold_titles=["Atlantis"], context=None)]
    evaluator = QAEvaluator(records, ["oracle", "basic"], index=index, log=lambda _: None,
                            settings=EvalSettings(judge=False, plots=False, show_progress=False, budgets=[1000]))
    with scripted() as engine:
        summary = evaluator(tmp_path / "out")
    assert list(summary["strategies"]) == ["oracle@1000", "basic"]
    rows = {r["id"]: r for r in evaluator.rows if r["strategy"] == "oracle@1000"}
    assert {k: r["oracle"] for k, r in rows.items()} == {"q1": "sentences", "q2": "documents", "q3": "none"}
    assert all(not r["error"] for r in evaluator.rows)
    assert rows["q1"]["gold_all"] == rows["q2"]["gold_all"] == 1.0 and rows["q3"]["gold_all"] == 0.0
    assert [r["usage"]["lm_calls"] for r in rows.values()] == [1, 1, 0]
    assert rows["q1"]["usage"]["context_tokens"] > 0 and rows["q1"]["usage"]["seconds"] > 0
    assert rows["q1"]["answer_prompt"] == {"question_at": "auto", "reasoning": False, "evidence_order": "auto"}
    assert any(e["step"] == "oracle" for e in rows["q1"]["trace"])
    assert "oracle" not in summary["strategies"]["basic"]
    assert summary["strategies"]["oracle@1000"]["oracle"] == {"passages": 0, "sentences": 1, "documents": 1, "none": 1}
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert ("oracle@1000: gold sentences 1, gold documents 1 (no usable sentence-level gold), none 1 (no gold "
            "evidence: not answered, counted wrong)") in report
    assert sum(1 for step, _ in engine.calls if step == "answer") == 2 + 3  # oracle: two; basic: three


def test_answer_presets_and_the_answer_lm_apply_to_the_oracle(index):
    reader = ProgramLM(answer=lambda p, n: {"reasoning": "She was Chief of Protocol.", "answer": "Chief of Protocol",
                                            "evidence_ids": ["c2"]})
    with scripted() as engine:
        evaluator, summary = _evaluate(index, ["oracle:qlast+cot"], [BRIDGE], answer_lm=reader.lm())
    assert engine.calls == [] and reader.steps() == ["answer"]
    (row,) = evaluator.rows
    assert row["answer"] == "Chief of Protocol" and row["em"] == 1.0 and row["evidence"] == [f"{ACTRESS}#0"]
    assert row["answer_prompt"] == {"question_at": "last", "reasoning": True, "evidence_order": "auto"}
    assert "reasoning" in reader.calls[0][1]


def test_build_oracle_composes_the_answer_step_like_the_registry(index):
    from ragnet.signatures import AnswerStep

    program = build_oracle("oracle:qfirst", index, [BRIDGE], budget=800)
    assert (program.budget, program.answer.question_at) == (800, "first")
    given = build_oracle("oracle", index, [BRIDGE], answer=AnswerStep(question_at="last"))
    assert given.answer.question_at == "last"
    with pytest.raises(InputError, match="set them in one place"):
        build_oracle("oracle:qfirst", index, [BRIDGE], answer=AnswerStep())
    with pytest.raises(InputError, match="oracle: .*unexpected keyword argument 'pool'"):
        build_oracle("oracle", index, [BRIDGE], pool=5)


def test_dspy_evaluate_runs_the_oracle(index):
    records = [BRIDGE, _record("q2", "Who played Corliss Archer in Kiss and Tell?", gold_titles=[FILM])]
    with scripted(answer=lambda p, n: {"answer": "Chief of Protocol", "evidence_ids": []}) as engine:
        result = dspy.Evaluate(devset=to_examples(records), metric=program_metric("em"), num_threads=1,
                               display_progress=False)(OracleRAG(index, records))
    assert float(getattr(result, "score", result)) == 100.0
    # the examples carry no sentences or paragraphs: the gold came with the program
    prompts = [_context_shown(p) for _, p in engine.calls]
    assert SENTENCES[ACTRESS][2].strip() in prompts[0] and SENTENCES[FILM][2].strip() in prompts[1]
