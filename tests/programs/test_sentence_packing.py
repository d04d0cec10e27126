"""OneShotRAG's sentence mode: the reader gets the chosen sentences of many chunks, within budget."""

from __future__ import annotations

import pytest

from ragnet.corpus.sentence_split import split_sentences
from ragnet.corpus.tokens import count_tokens
from ragnet.programs import OneShotRAG, Pack
from ragnet.programs.sentence_packing import GAP, sentence_candidates
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"


@pytest.mark.parametrize("budget", [600, 900, 1500])
def test_prompt_holds_only_chosen_sentences_and_respects_the_budget(yearbook_index, run_with, budget):
    with run_with(ProgramLM()) as lm:
        pred = OneShotRAG(yearbook_index, budget, pack=Pack(sentences=True))(question=Q)
    (prompt,) = [p for s, p in lm.calls if s == "answer"]
    assert count_tokens(prompt) <= budget
    (select,) = [e for e in pred.trace if e["step"] == "select"]
    assert select["method"] == "sentences" and select["tokens"] <= budget and pred.context == select["kept"]
    for entry in select["sentences"]:
        chunk = yearbook_index.chunk(entry["id"])
        sentences = split_sentences(chunk.text)
        assert entry["of"] == len(sentences) and entry["kept"] == sorted(entry["kept"])
        for position in entry["kept"]:  # every chosen sentence reaches the reader verbatim
            assert sentences[position] in prompt


def test_sentence_mode_fits_more_chunks_than_whole_chunks(yearbook_index, run_with):
    with run_with(ProgramLM()):
        whole = OneShotRAG(yearbook_index, budget=900).retrieve(Q)
        cropped = OneShotRAG(yearbook_index, 900, pack=Pack(sentences=True)).retrieve(Q)
    assert len(cropped) > len(whole)
    assert any(GAP in c.text or c.text != yearbook_index.chunk(c.id).text for c in cropped)
    # the fact asked for is in the reader's context
    assert any("Aldermoor" in c.title and "2021" in c.title and "population" in c.text for c in cropped)


def test_cropped_chunks_are_traced_for_stage_retention(yearbook_index, run_with):
    with run_with(ProgramLM()):
        pred = OneShotRAG(yearbook_index, 700, pack=Pack(sentences=True))(question=Q)
    (crop,) = [e for e in pred.trace if e["step"] == "crop"]
    assert crop["kind"] == "sentences" and crop["cropped"]
    assert all(c["tokens_after"] < c["tokens_before"] for c in crop["cropped"])


def test_chunks_whose_text_changed_are_split_and_embedded_on_the_fly(yearbook_index):
    chunks = yearbook_index.search(Q, k=5)
    stored = sentence_candidates(yearbook_index, chunks, Q)
    # the last chunk's text differs from the index's (as after an LM crop): not read from the store
    edited = chunks[:4] + [chunks[4].with_text(chunks[4].text + " Extra.", chunks[4].tokens + 2)]
    adhoc = sentence_candidates(yearbook_index, edited, Q)
    n = sum(1 for c in stored.chunk_of if c < 4)
    assert adhoc.texts[:n] == stored.texts[:n] and (adhoc.cos[:n] == stored.cos[:n]).all()
    assert adhoc.texts[n:] == stored.texts[n:] + ["Extra."]
    assert abs(adhoc.cos[n] - stored.cos[n]) < 1e-2  # fresh embedding of the same sentence (float16 store)


def test_in_a_sectioned_document_the_sentence_after_a_chosen_one_keeps_a_share_of_its_value(tmp_path):
    """A manual states a fact over two short sentences; the second shares no word with the question,
    the third does. With room for the first and one more, a sectioned chunk shows the second."""
    import ragnet
    from ragnet.programs.sentence_packing import select_sentences

    body = ("Adjust the maximum depth of the template stack before the loop check. The default is 3000. "
            "Each stack holds nested templates.")
    sectioned = ragnet.Document(id="tool", title="Tool", text=body, location={"file": "tool.md"},
                                positions=((0, {"headings": ["Limits"]}),))
    flat = ragnet.Document(id="flat", title="Tool", text=body)
    index = ragnet.Index.build([sectioned, flat], tmp_path / "idx", show_progress=False)
    question = "What is the maximum depth of the template stack?"
    by_id = {c.id: c for c in index.search(question, k=5)}
    for cid, expect in (("tool#0", True), ("flat#0", False)):  # sectioned, then the same text without sections
        whole = select_sentences([by_id[cid]], question, index, context_budget=10_000)
        texts, tokens = whole.candidates.texts, whole.candidates.tokens
        first = texts.index(next(t for t in texts if t.startswith("Adjust")))
        room = int(whole.headers[0] + tokens[first] + 1 + max(tokens[j] + 1 for j in range(len(texts)) if j != first))
        choice = select_sentences([by_id[cid]], question, index, context_budget=room)
        shown = [choice.candidates.texts[j] for j in choice.picked]
        assert len(shown) == 2 and ("The default is 3000." in shown) is expect, shown


def test_a_line_naming_the_option_of_the_best_line_takes_a_share_of_its_value_across_sections(tmp_path):
    """A two-part answer in a manual: the option the question describes is in one section, the
    startup-file command that does the same in another, tied only by the option's name. The
    command's line shares no word with the question; the option link gives it half the best
    line's value, which a line of another option or of another command does not get."""
    import ragnet
    from ragnet.core.sentence_values import SentenceWeights
    from ragnet.programs.sentence_packing import select_sentences

    invoking = ("Logging options.\n\n'-o LOGFILE'\nLog all messages to LOGFILE instead of standard error.\n\n"
                "'-a LOGFILE'\nAppend all messages to LOGFILE instead of overwriting it.")
    startup = ("The wgetrc commands.\n\nquiet = on/off\nTurn quiet mode on or off.\n\n"
               "logfile = FILE\nSet logfile to FILE, the same as '-o FILE'.\n\nwait = N\nWait N seconds between retrievals.")
    docs = [ragnet.Document(id="wget-invoking", title="Wget", text=invoking, location={"file": "wget.md"},
                            positions=((0, {"headings": ["Invoking"]}),)),
            ragnet.Document(id="wget-startup", title="Wget", text=startup, location={"file": "wget.md"},
                            positions=((0, {"headings": ["Startup File"]}),))]
    index = ragnet.Index.build(docs, tmp_path / "idx", show_progress=False)
    question = "Which wgetrc command does the same as the option that writes all messages to a file instead of standard error?"
    chunks = index.search(question, k=2)

    def values(weights):
        choice = select_sentences(chunks, question, index, context_budget=10_000, weights=weights)
        return {text.split("\n")[0]: float(v) for text, v in zip(choice.candidates.texts, choice.values)}

    linked, plain = values(SentenceWeights()), values(SentenceWeights(option_link=0.0))
    best = max(linked.values())
    assert linked["'-o LOGFILE'"] == best
    assert linked["logfile = FILE"] >= 0.5 * best > 100 * plain["logfile = FILE"]
    assert linked["quiet = on/off"] == plain["quiet = on/off"] and linked["wait = N"] == plain["wait = N"]
