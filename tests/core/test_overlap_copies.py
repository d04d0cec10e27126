"""Overlap copies: a sentence two neighbouring chunks of one document hold is packed once."""

from __future__ import annotations

import numpy as np

from ragnet.core.overlap_copies import drop_overlap_copies


def test_the_best_copy_of_a_neighbours_sentence_stays_and_the_others_go():
    texts = ["Opening.", "The default is 8 jobs.", "The default is 8 jobs.", "Closing."]
    values = np.array([0.3, 0.4, 0.6, 0.2])
    out = drop_overlap_copies(values, texts, np.array([0, 0, 1, 1]), ["m", "m"], [7, 8])
    assert out.tolist() == [0.3, 0.0, 0.6, 0.2]
    assert values.tolist() == [0.3, 0.4, 0.6, 0.2]  # the input is not changed


def test_copies_in_other_places_of_a_document_or_another_document_all_stay():
    texts = ["Returns: 0 on success.", "Returns: 0 on success.", "Returns: 0 on success.", "Returns: 0 on success."]
    values = np.array([0.5, 0.4, 0.3, 0.2])
    # chunks 2 and 5 of one manual are not neighbours; chunk 3 of another document is not its neighbour either
    out = drop_overlap_copies(values, texts, np.array([0, 0, 1, 2]), ["m", "m", "other"], [2, 5, 3])
    assert out.tolist() == values.tolist()  # twice in chunk 0, once in chunk 1, once in another document


def test_a_tie_keeps_the_earlier_copy_and_whitespace_does_not_hide_a_copy():
    texts = ["A  line\nwraps.", "A line wraps."]
    out = drop_overlap_copies(np.array([0.5, 0.5]), texts, np.array([0, 1]), ["m", "m"], [1, 0])
    assert out.tolist() == [0.5, 0.0]


def test_a_pack_over_overlapping_chunks_shows_no_sentence_twice(tmp_path):
    import ragnet
    from ragnet.corpus.sentence_split import split_sentences
    from ragnet.programs.packing import PromptBudget
    from ragnet.programs.sentence_packing import pack_sentences

    lines = [f"Option -{chr(97 + i)} sets the {word} limit to {i + 2} units." for i, word in
             enumerate("job load disk memory queue thread socket retry cache timer buffer".split())]
    text = " ".join(lines)
    plain = ragnet.Document(id="man", title="Manual", text=text)
    doc = ragnet.Document(id="man", title="Manual", text=text,  # a manual's section: the rule applies there
                          positions=((0, {"file": "man.md", "headings": ["2 Options"]}),))
    question = "Which option sets the memory limit and the queue limit?"

    def shown(document, folder):
        index = ragnet.Index.build([document], tmp_path / folder, show_progress=False, chunk_tokens=48, overlap=24)
        chunks = index.search(question, k=len(index))
        assert len(chunks) >= 3 and any(  # the windows overlap: some sentence is in two chunks
            set(split_sentences(a.text)) & set(split_sentences(b.text)) for a in chunks for b in chunks if a.id < b.id)
        packed = pack_sentences(chunks, question, PromptBudget(ragnet.BasicRAG(index).answer.predict, question, 2000),
                                index)
        return [s for c in packed.chunks for part in c.text.split("…") for s in split_sentences(part)]

    manual = shown(doc, "manual")
    assert len(manual) == len(set(manual)) and set(lines) <= set(manual)  # every line once, none twice
    passages = shown(plain, "plain")  # a document without sections (Wikipedia's passages) keeps both copies
    assert set(lines) <= set(passages) and len(passages) > len(set(passages))
