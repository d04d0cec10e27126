"""The answer step rejects an answer that names a place (a section number, a heading, a title) or
copies the question, and asks once more; over a manual it shows each chunk's section as a place."""

from __future__ import annotations

from ragnet import Chunk
from ragnet.signatures import AnswerStep
from tests.programs.scripted import ProgramLM

Q = "Which option makes the tool stop at the first error?"
HEADINGS = ["2.7 Core options", "2.7.3. Error-related Options"]


def _manual() -> list[Chunk]:
    location = {"file": "tool.pdf", "page": 9, "headings": HEADINGS}
    return [Chunk(id="tool#7", doc_id="tool", title="Tool manual › 2.7 Core options › 2.7.3. Error-related Options",
                  text="2.7.3. Error-related Options\nUse --fatal to stop at the first error.", tokens=14,
                  metadata={"location": location})]


def _reader(*answers: str) -> ProgramLM:
    return ProgramLM(answer=lambda prompt, n: {"answer": answers[min(n, len(answers)) - 1], "evidence_ids": ["c1"]})


def test_a_section_number_is_rejected_and_the_second_answer_taken(run_with):
    with run_with(_reader("2.7.3", "--fatal")) as lm:
        pred = AnswerStep(question_at="last")(question=Q, context=_manual())
    assert pred.answer == "--fatal" and pred.rejected == [{"answer": "2.7.3", "reason": "a section number"}]
    (_, first), (_, second) = lm.calls
    # the place is shown as a place, without its number, and the heading line is not repeated as text
    assert "[c1] (Tool manual › Core options › Error-related Options) Use --fatal" in first
    assert "never the answer" in first and "2.7.3" not in first.split("[[ ## context ## ]]")[1]
    assert '"2.7.3" is a section number, not the answer.' in second and "rejected" not in first


def test_when_the_second_answer_is_ruled_out_too_the_first_stands(run_with):
    with run_with(_reader("Error-related Options", "2.7.3")) as lm:
        pred = AnswerStep(question_at="last")(question=Q, context=_manual())
    assert len(lm.calls) == 2 and pred.answer == "Error-related Options"
    assert [r["reason"] for r in pred.rejected] == ["a heading", "a section number"]


def test_a_right_answer_costs_one_call_and_prose_is_shown_as_before(run_with):
    with run_with(_reader("--fatal")) as lm:
        pred = AnswerStep()(question=Q, context=_manual())
    assert pred.answer == "--fatal" and pred.rejected == [] and len(lm.calls) == 1
    prose = [Chunk(id="p#0", doc_id="p", title="Paris", text="Paris is the capital of France.", tokens=7)]
    with run_with(_reader("Paris")) as lm:
        AnswerStep()(question="Capital of France?", context=prose)
    ((_, prompt),) = lm.calls
    assert "[c1] Paris: Paris is the capital" in prompt and "never the answer" not in prompt


def test_the_trace_records_what_was_rejected(run_with, tmp_path):
    import ragnet
    from ragnet.programs import BasicRAG

    (tmp_path / "tool.md").write_text("# Tool manual\n\n## 2.7 Core options\n\nOptions every run reads.\n\n"
                                      "### 2.7.3. Error-related Options\n\nUse --fatal to stop at the first error.\n")
    index = ragnet.Index.build(ragnet.load_documents([tmp_path / "tool.md"]), tmp_path / "index", show_progress=False)
    with run_with(_reader("2.7.3", "--fatal")):
        pred = BasicRAG(index, k=2)(question=Q)
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert pred.answer == "--fatal" and event["rejected"] == [{"answer": "2.7.3", "reason": "a section number"}]
