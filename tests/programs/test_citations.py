"""``pred.citations``: one per evidence chunk, in evidence order, with where the chunk is from and
exactly the sentences of it the reader saw; none for a failed answer.

A real index whose chunks carry locations (``tests/located.py``) and a scripted LM for the
control flow: it cites chunks by their titles in the prompt, so the cited order is known.
"""

from __future__ import annotations

import json
import re

import pytest

from ragnet.corpus.sentence_split import split_sentences
from ragnet.corpus.types import Document
from ragnet.programs import BasicRAG
from ragnet.programs.registry import build_program
from tests.located import build_located_index
from tests.programs.scripted import ProgramLM

QUESTION = "Why did Acme revenue rise in 2023?"
REPORT = ("Acme Corporation publishes an annual report every spring. The board met in Oslo twice. "
          "The cafeteria menu changed in March. The parking lot was repaved in the autumn. "
          "Revenue at Acme rose by 12 percent in 2023 because exports to Brazil doubled. "
          "The annual picnic was cancelled because of rain.")
NOTES = "Exports to Brazil doubled after a new port opened in Santos. The team visited the port in June."
TEA = "Tea is a drink made from leaves. It is popular in Britain."
LOCATIONS = {
    "report#0": {"file": "reports/acme.pdf", "page": 4, "page_end": 5, "headings": ["Results", "Revenue"]},
    "notes#0": {"file": "notes.jsonl", "line": 12},
}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    docs = [Document(id="report", title="Annual report", text=REPORT),
            Document(id="notes", title="Field notes", text=NOTES),
            Document(id="tea", title="Tea", text=TEA)]
    return build_located_index(docs, tmp_path_factory.mktemp("citations") / "idx", LOCATIONS)


def citing(*titles: str):
    """An answer responder that cites the chunks with these titles, in this order."""

    def answer(prompt: str, n: int):
        shorts = {t: re.findall(rf"\[(c\d+)\] {re.escape(t)}: ", prompt) for t in titles}
        return {"answer": "exports to Brazil doubled", "evidence_ids": [shorts[t][-1] for t in titles if shorts[t]]}

    return answer


def _sentences(index, cid):
    return split_sentences(index.chunk(cid).text)


def test_whole_chunks_are_cited_in_evidence_order_with_their_location_and_sentences(index, run_with):
    with run_with(ProgramLM(answer=citing("Field notes", "Annual report"))):
        pred = BasicRAG(index, k=3)(question=QUESTION)
    # both state the answer; the report's sentence also names what the question asks about, so it
    # supports the answer best and comes first, though the reader cited the notes first
    assert pred.evidence == ["report#0", "notes#0"]
    report, notes = pred.citations
    assert notes == {"id": "notes#0", "doc_id": "notes", "title": "Field notes", "file": "notes.jsonl",
                     "line": 12, "sentences": _sentences(index, "notes#0"), "states_answer": True}
    # the sentence that states the answer comes first, the others in document order after it
    whole = _sentences(index, "report#0")
    assert report == {"id": "report#0", "doc_id": "report", "title": "Annual report", "file": "reports/acme.pdf",
                      "page": 4, "page_end": 5, "headings": ["Results", "Revenue"],
                      "sentences": [whole[4], *whole[:4], whole[5]], "states_answer": True}
    assert len(report["sentences"]) == 6  # the splitter's sentences of the whole chunk
    assert json.loads(json.dumps(pred.citations)) == pred.citations


def test_the_best_supporting_chunks_are_cited_and_one_of_the_readers_own_stays_among_them():
    from ragnet.corpus.types import Chunk
    from ragnet.programs.citations import MAX_CITED, supported_evidence

    def chunk(i: int, text: str) -> Chunk:
        return Chunk(id=f"m#{i}", doc_id="m", title="Manual", text=text, tokens=9)

    question = "What is the default priority?"
    # four chunks state "50"; the reader cited only the one where it occurs by chance (a hex dump)
    context = [chunk(0, "Offsets: 4d 49 [50: 0a."), *(chunk(i, f"Rule {i}: the default priority is 50.")
                                                      for i in (1, 2, 3))]
    cited = supported_evidence("50", question, context, cited=["m#0"])
    assert len(cited) == MAX_CITED == 3
    assert cited[:2] == ["m#1", "m#2"] and cited[-1] == "m#0"  # kept, after the better-supported ones
    assert supported_evidence("50", question, context, cited=["m#3"])[0] == "m#3"  # among equals, the reader's own
    # the answer as written outranks its words alone: "-wget@" against a mere "wget"
    context = [chunk(4, "Run wget with a password for FTP."), chunk(5, "The password defaults to -wget@.")]
    assert supported_evidence("-wget@", "What FTP password by default?", context, cited=["m#4"])[0] == "m#5"
    # a sentence shared by two chunks: the chunk whose text is more about the question first
    context = [chunk(6, "Available since 1.2. Tools list."),
               chunk(7, "Available since 1.2. A build file may declare the minimum version.")]
    assert supported_evidence("1.2", "Since which version can a build file declare a minimum version?",
                              context, cited=["m#6"])[0] == "m#7"
    # ... and a chunk's section path says what its sentences are about: "The default is '0'." under
    # "Startup File" answers a question about the startup file before the same words under "HTTP Options"
    # (the reader's own, which would lead among equals)
    def placed(i: int, text: str, *headings: str) -> Chunk:
        return Chunk(id=f"w#{i}", doc_id="w", title="wget", text=text, tokens=9,
                     metadata={"location": {"file": "wget.pdf", "headings": list(headings)}})

    context = [placed(8, "The default is '0'.", "2 Invoking", "2.7 HTTP Options"),
               placed(9, "The default is '0'.", "6 Startup File", "6.3 Wgetrc Commands")]
    assert supported_evidence("0", "How many backups does the startup file setting keep by default?",
                              context, cited=["w#8"])[0] == "w#9"
    # a number the manual spells out states a digit answer
    context = [chunk(10, "Context lines are shown around each change."),
               chunk(11, "When not given, it defaults to three.")]
    assert supported_evidence("3", "How many context lines by default?", context, cited=["m#10"])[0] == "m#11"


def test_a_chunk_without_a_location_cites_its_id_title_and_sentences_only(index, run_with):
    def britain(prompt: str, n: int):
        return {"answer": "Britain", "evidence_ids": re.findall(r"\[(c\d+)\] Tea: ", prompt)}

    with run_with(ProgramLM(answer=britain)):
        pred = BasicRAG(index, k=3)(question="Where is tea popular?")
    assert pred.citations == [{"id": "tea#0", "doc_id": "tea", "title": "Tea", "states_answer": True,
                               "sentences": ["It is popular in Britain.", "Tea is a drink made from leaves."]}]


def test_an_answer_no_sentence_states_keeps_the_readers_ids(index, run_with):
    def tea_yes(prompt: str, n: int):
        return {"answer": "yes", "evidence_ids": re.findall(r"\[(c\d+)\] Tea: ", prompt)}

    with run_with(ProgramLM(answer=tea_yes)):
        pred = BasicRAG(index, k=3)(question="Is tea popular in Britain?")
    assert pred.evidence == ["tea#0"]
    assert pred.citations[0]["states_answer"] is False
    assert pred.citations[0]["sentences"][0] == "It is popular in Britain."  # the question's words, best first


def test_sentence_packing_cites_exactly_the_selected_sentences(index, run_with):
    program = build_program("oneshot:sentences", index, budget=500)  # room for some sentences of both
    with run_with(ProgramLM(answer=citing("Annual report", "Field notes"))) as lm:
        pred = program(question=QUESTION)
    [select] = [e for e in pred.trace if e["step"] == "select"]
    kept = {entry["id"]: entry["kept"] for entry in select["sentences"]}
    assert [c["id"] for c in pred.citations] == pred.evidence == ["report#0", "notes#0"]
    report = pred.citations[pred.evidence.index("report#0")]
    # cropped with a gap: re-splitting the shown text would glue the gap mark to a sentence
    assert len(kept["report#0"]) < 6 and kept["report#0"] != list(range(kept["report#0"][0], kept["report#0"][-1] + 1))
    for cite in pred.citations:
        shown = [_sentences(index, cite["id"])[p] for p in kept[cite["id"]]]
        assert sorted(cite["sentences"]) == sorted(shown) and cite["states_answer"]
        assert "exports to Brazil doubled".casefold() in cite["sentences"][0].casefold()
    prompt = lm.calls[-1][1]
    assert all(s in prompt for c in pred.citations for s in c["sentences"])
    # the packed chunk kept its metadata: the location survives the crop
    assert report["page"] == 4 and report["headings"] == ["Results", "Revenue"] and report["file"] == "reports/acme.pdf"
    assert pred.citations[1]["line"] == 12
    # the index's own chunk was not touched by the crop's record
    assert "shown_sentences" not in index.chunk("report#0").metadata


def _fail(prompt: str, n: int):
    raise RuntimeError("the LM is down")


@pytest.mark.parametrize("spec", ["basic", "oneshot:sentences"])
def test_a_failed_answer_cites_nothing(index, run_with, spec):
    program = build_program(spec, index, budget=480)
    with run_with(ProgramLM(answer=_fail)):
        pred = program(question=QUESTION)
    assert pred.context and pred.evidence == [] and pred.citations == []


@pytest.mark.parametrize("spec", ["basic", "oneshot", "oneshot:sentences", "iterative", "reflective", "combined",
                                  "router"])
def test_every_strategy_cites_its_evidence(index, run_with, spec):
    with run_with(ProgramLM(answer=citing("Annual report"))):
        pred = build_program(spec, index, budget=600)(question=QUESTION)
    # the reader's own chunk first; the field notes state the answer too, so they are cited after it
    assert pred.evidence[0] == "report#0" and set(pred.evidence) <= {"report#0", "notes#0"}
    cite = pred.citations[0]
    assert cite["id"] == "report#0" and cite["page"] == 4 and cite["headings"] == ["Results", "Revenue"]
    [shown] = [p["text"] for p in pred.passages if p["id"] == "report#0"]
    assert cite["sentences"] and all(s in shown for s in cite["sentences"])


def test_a_reader_that_cites_a_neighbour_is_corrected_to_the_chunk_that_states_the_answer(index, run_with):
    def cites_tea(prompt: str, n: int):
        tea = re.findall(r"\[(c\d+)\] Tea: ", prompt)
        return {"answer": "12 percent", "evidence_ids": tea}

    with run_with(ProgramLM(answer=cites_tea)):
        pred = BasicRAG(index, k=3)(question="By how much did Acme revenue rise in 2023?")
    assert pred.evidence == ["report#0"]
    [answer] = [e for e in pred.trace if e["step"] == "answer"]
    assert answer["reader_cited"] == ["tea#0"]
    [cite] = pred.citations
    assert cite["sentences"][0].startswith("Revenue at Acme rose by 12 percent") and cite["states_answer"]
