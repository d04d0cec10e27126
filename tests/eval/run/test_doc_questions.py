"""``ragnet eval --docs FOLDER --data FILE``: questions over a folder of documents, scored on right
answers, the gold place in the context and in the citations, with an oracle row that reads the gold
quotes (issue 46, item 1). A real index of real files; a scripted LM for the control flow."""

from __future__ import annotations

import json
import re

import dspy
import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from ragnet.errors import InputError
from ragnet.eval.metrics.gold_evidence import gold_chunks
from ragnet.eval.run.doc_questions import GoldPlace, at_place, check_places, load_doc_questions
from tests.corpus.make_files import pdf_bytes, write
from tests.programs.scripted import ProgramLM

MANUAL = """# Tool manual

## Options

Use --jobs to set how many commands run at once. The --log-file option names the log.

## Defaults

The number of parallel jobs defaults to 8 on every machine. Logs are kept for 30 days.
"""
GUIDE = """# Guide

## Install

Install the tool with pip, then run the self test before anything else.
"""
QUESTIONS = [
    {"id": "d1", "question": "How many days are logs kept?", "answers": ["30 days"], "kind": "numeric",
     "gold": [{"file": "manual.md", "section": ["Tool manual", "Defaults"], "quote": "Logs are kept for 30 days."}]},
    {"id": "d2", "question": "What is the default of the option that sets how many commands run at once?",
     "answers": ["8"], "kind": "two-part",
     "gold": [{"file": "manual.md", "section": ["Tool manual", "Options"], "role": "link",
               "quote": "Use --jobs to set how many commands run at once."},
              {"file": "manual.md", "section": ["Tool manual", "Defaults"],
               "quote": "The number of parallel jobs defaults to 8 on every machine."}]},
    {"id": "d3", "question": "What should you run after installing?", "answers": ["the self test"], "kind": "lookup",
     "gold": [{"file": "docs/guide.md", "section": ["Guide", "Install"]}]},
]
ANSWERS = {"How many days are logs kept?": ("30 days", "Options"),  # right answer, the reader cites the wrong section
           "What is the default of the option that sets how many commands run at once?": ("8", "Defaults"),
           "What should you run after installing?": ("pip", "Install")}


def _answer(prompt: str, n: int):
    question = re.findall(r"\[\[ ## question ## \]\]\s*\n(.*)", prompt)[-1].strip()
    answer, section = ANSWERS[question]
    cited = re.findall(rf"\[(c\d+)\] [^\n]*{section}: ", prompt)
    return {"answer": answer, "evidence_ids": cited[:1]}


def _eval_docs(folder, tmp_path, monkeypatch, name: str, *args: str):
    """``ragnet eval --docs`` over the test folder with the scripted reader of :func:`_answer`;
    returns the CLI result and the run folder."""
    docs, questions = folder
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("ragnet.lm.config.configure", lambda lm=None, **kw: dspy.settings.lm)
    out = tmp_path / name
    with dspy.context(lm=ProgramLM(answer=_answer).lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        result = CliRunner().invoke(app, ["eval", "--docs", str(docs), "--data", str(questions), "--no-judge",
                                          "--no-plots", "--out", str(out), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result, out


@pytest.fixture
def folder(tmp_path):
    docs = tmp_path / "docs"
    write(docs / "manual.md", MANUAL)
    write(docs / "docs" / "guide.md", GUIDE)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n", encoding="utf-8")
    return docs, questions


def test_questions_file_is_read_with_its_places(folder):
    _, path = folder
    q1, q2, q3 = load_doc_questions(path)
    assert q2.type == "two-part" and [p.role for p in q2.places] == ["link", "answer"]
    assert q2.answer_places() == (q2.places[1],)
    assert q3.places[0].file == "docs/guide.md" and q3.places[0].section == ("Guide", "Install")
    assert [q.id for q in load_doc_questions(path, ids=["d3", "d1"])] == ["d1", "d3"]


@pytest.mark.parametrize("line, message", [
    ('{"id": "x", "question": "q?", "answers": []}', "'answers' must be a non-empty list"),
    ('{"id": "x", "question": "q?", "answers": ["a"], "gold": [{"page": 2}]}', "gold[0]: must be an object with a 'file'"),
    ('{"id": "x", "question": "q?", "answers": ["a"], "gold": [{"file": "a.pdf", "page": 0}]}', "'page' must be"),
    ('{"id": "x", "question": "q?", "answers": ["a"], "gold": [{"file": "a.pdf", "role": "main"}]}', "'role' must be"),
    ('{"id": "x", "question": "q?", "answers": ["a"]', "invalid JSON"),
])
def test_bad_questions_name_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "ok", "question": "q?", "answers": ["a"]}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)) as err:
        load_doc_questions(path)
    assert "q.jsonl:2" in str(err.value)


def test_a_place_matches_its_page_range_and_subsections():
    place = GoldPlace("a.pdf", page=4)
    assert at_place({"file": "a.pdf", "page": 3, "page_end": 5}, place)
    assert not at_place({"file": "b.pdf", "page": 4}, place)
    assert not at_place({"file": "a.pdf"}, place)
    section = GoldPlace("m.html", section=("Rules",))
    assert at_place({"file": "m.html", "headings": ["Rules", "Variables"]}, section)
    assert not at_place({"file": "m.html", "headings": ["Build"]}, section)


def test_eval_docs_scores_right_answers_places_and_citations(folder, tmp_path, monkeypatch):
    _, out = _eval_docs(folder, tmp_path, monkeypatch, "out", "--strategies", "basic,oracle", "--lm", "scripted")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["primary_metric"] == "contains"
    basic, oracle = summary["documents"]["basic"], summary["documents"]["oracle"]
    assert basic["right_count"] == 2 and basic["two_part"] == 1 and basic["two_part_right"] == 1.0
    # "30" is stated in the Defaults section: the citation is moved there from the reader's Options chunk
    assert basic["cited_of_right"] == 1.0
    # d3's place quotes nothing: the oracle reads its gold document instead
    assert oracle["right_count"] == 2 and summary["strategies"]["oracle"]["oracle"] == {
        "passages": 2, "sentences": 0, "documents": 1, "none": 0}
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    d1 = next(r for r in rows if r["strategy"] == "basic" and r["id"] == "d1")
    assert d1["gold_cited_first"] == 1.0 and d1["gold_place_in_context"] == 1.0 and d1["answer_in_context"] == 1.0
    d3 = next(r for r in rows if r["strategy"] == "basic" and r["id"] == "d3")
    assert d3["contains"] == 0.0 and d3["gold_place_in_context"] == 1.0  # a miss with the evidence in front of it
    # the quoted lines were shown; d3's place quotes nothing, so it has no line figure at all
    assert d1["line_in_context"] == 1.0 and "line_in_context" not in d3
    assert basic["line_in_context"] == 1.0 and basic["quoted_misses"] == 0
    report = (out / "report.md").read_text()
    assert "### Over your documents" in report and "two-part right" in report
    cells = [c.strip() for c in next(line for line in report.splitlines()
                                     if line.startswith("| basic |") and " of " in line).split("|")[1:-1]]
    # shares of a few questions are shown as counts: "1 of 1", never "100.0 of 1"
    assert cells[5] == "1 of 1" and cells[9] == "100.0" and cells[-2].startswith("1 of 1 (") and cells[-1] == "–"
    assert cells[3].split(" ")[0] == str(basic["right_strict_count"])  # the strict match beside the lenient one
    # a scripted LM reports no logprobs: no confidence in the rows, the summary or the report
    assert d1["confidence"] is None and "confidence_auroc" not in basic and "AUROC" not in report


def test_the_answers_line_counts_as_shown_by_one_sentence_or_the_quote_whole():
    from ragnet.eval.run.doc_questions import quote_shown

    quote = "The default fuzz factor is 2; there is no point to setting it higher."
    assert quote_shown(quote, ["Context lines. … The default fuzz factor is 2; there is no point to"])
    assert not quote_shown(quote, ["The fuzz factor is set with -F. … Its default is in the next section."])
    two = "Backups are rotated. The default is 0."
    assert quote_shown(two, ["Backups are rotated. The default is 0. Other text."])
    assert not quote_shown("", ["anything"]) and not quote_shown(quote, [])


def test_a_line_figure_is_left_out_where_no_question_quotes_its_place():
    from ragnet.eval.metrics.stats import aggregate
    from ragnet.eval.report.summary import documents_figures

    rows = [{"contains": 1.0, "f1": 1.0, "em": 1.0, "type": "lookup"}, {"contains": 0.0, "f1": 0.0, "em": 0.0}]
    assert aggregate(rows, ["line_in_context"])["line_in_context"] is None
    assert documents_figures(rows)["line_in_context"] is None
    rows[1]["line_in_context"] = 1.0
    figures = documents_figures(rows)
    assert figures["line_in_context"] == 1.0 and figures["misses_with_line_shown"] == 1.0 and figures["quoted_misses"] == 1


def test_the_report_says_how_well_the_readers_confidence_tells_right_from_wrong():
    from ragnet.eval.report.markdown_report import _documents_lines
    from ragnet.eval.report.summary import documents_figures

    rows = [{"contains": float(ok), "f1": float(ok), "em": float(ok), "type": "lookup", "confidence": None,
             "trace": [{"step": "answer", "confidence": conf}]}
            for ok, conf in [(1, 0.95), (1, 0.9), (0, 0.6), (1, 0.5), (0, 0.2), (0, 0.1)]]
    figures = documents_figures(rows)
    assert figures["confidence_n"] == 6 and figures["confidence_auroc"] == round(8 / 9, 6)
    assert figures["right_of_surer_half"] == round(2 / 3, 6) and figures["right_of_other_half"] == round(1 / 3, 6)
    text = "\n".join(_documents_lines({"auto": figures}, ["auto"]))
    assert "- auto: AUROC 0.89; the surer half of its answers (confidence ≥ 0.60) 66.7% right, the rest 33.3%" in text


def test_eval_docs_runs_auto_as_ask_does_and_takes_it_as_the_baseline(folder, tmp_path, monkeypatch):
    """`--strategies basic,auto --baseline auto` with a local reader: auto is oneshot:sentences+hops
    at the budget of documents with sections (the folder's Markdown headings), 1,000 tokens, the
    row every other is compared with."""
    _, out = _eval_docs(folder, tmp_path, monkeypatch, "out", "--strategies", "basic,auto", "--baseline", "auto",
                        "--lm", "local", "--answer-lm", "none")
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["strategies"]) == ["basic", "oneshot:sentences+hops@1000"]
    assert summary["baseline"] == "oneshot:sentences+hops@1000"


def test_gold_places_are_the_gold_documents_of_a_docs_question(folder, tmp_path):
    from ragnet import Index, load_documents

    docs, questions = folder
    index = Index.build(load_documents([docs]), tmp_path / "idx", show_progress=False)
    q2 = load_doc_questions(questions)[1]
    gold = gold_chunks(q2, index)
    assert list(gold) == ["manual.md › Tool manual › Options", "manual.md › Tool manual › Defaults"]
    assert all(len(ids) == 1 for ids in gold.values())


def test_eval_hops_over_documents_counts_the_places_the_first_context_misses(folder, tmp_path, monkeypatch):
    docs, questions = folder
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    out = tmp_path / "hops"
    result = CliRunner().invoke(app, ["eval", "hops", "--docs", str(docs), "--data", str(questions),
                                      "--kind", "two-part", "--budget", "450", "--out", str(out)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["d2"]  # the two-part question only
    assert set(rows[0]["missing"]) <= {"manual.md › Tool manual › Options", "manual.md › Tool manual › Defaults"}
    bad = CliRunner().invoke(app, ["eval", "hops", "--docs", str(docs), "--data", str(questions), "--kind", "nope"])
    assert bad.exit_code == 2 and "no questions of kind 'nope'" in bad.output


def test_gold_places_the_folder_lacks_are_refused_naming_the_line_and_what_the_file_has(folder, tmp_path):
    from ragnet import Index, load_documents

    docs, questions = folder
    index = Index.build(load_documents([docs]), tmp_path / "idx", show_progress=False)
    assert check_places(index, load_doc_questions(questions), questions) == []
    wrong = [dict(QUESTIONS[0], gold=[{"file": "guide.md", "section": ["Guide"]}]),
             dict(QUESTIONS[1], gold=[{"file": "manual.md", "section": ["Tool manual", "Usage"]}]),
             dict(QUESTIONS[2], gold=[{"file": "manual.md", "section": ["Tool manual", "Defaults"],
                                        "quote": "Logs are rotated every week."}])]
    path = tmp_path / "wrong.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in wrong) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        check_places(index, load_doc_questions(path), path)
    message = str(err.value)
    assert message.startswith(f"{path}: 2 gold place(s) match nothing in the documents folder")
    assert "line 1 (d1), guide.md › Guide: no file guide.md was indexed from the folder (did you mean docs/guide.md?)" in message
    assert "line 2 (d2), manual.md › Tool manual › Usage: manual.md has no section Tool manual › Usage" in message
    # a quote the indexed text lacks is only a warning: the place is there
    warnings = check_places(index, load_doc_questions(path, ids=["d3"]), path)
    assert warnings == ["line 3 (d3), manual.md › Tool manual › Defaults: its quote is not in the text indexed "
                        "there ('Logs are rotated every week.')"]


def test_eval_docs_refuses_a_gold_page_past_the_files_last_before_asking_the_lm(folder, tmp_path, monkeypatch):
    docs, _ = folder
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    write(docs / "notes.pdf", pdf_bytes(["Page one says how long logs are kept, in days.",
                                          "Page two says how many jobs run at once on every machine."]))
    path = tmp_path / "pages.jsonl"
    path.write_text(json.dumps({"id": "p1", "question": "What about jobs?", "answers": ["jobs"],
                                "gold": [{"file": "notes.pdf", "page": 9}]}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "--docs", str(docs), "--data", str(path), "--strategies", "basic",
                                      "--lm", "scripted", "--no-judge", "--no-plots", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "line 1 (p1), notes.pdf, p. 9: notes.pdf has pages 1 to 2" in result.stderr


def test_eval_docs_only_answers_every_question_from_the_chosen_files(folder, tmp_path, monkeypatch):
    result, out = _eval_docs(folder, tmp_path, monkeypatch, "only", "--strategies", "basic", "--lm", "scripted",
                             "--only", "manual.md")
    _, questions = folder
    assert "asking 1 of the folder's files: manual.md" in result.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows and all(cid.startswith("manual.md#") for r in rows for cid in r["context"])
    d3 = next(r for r in rows if r["id"] == "d3")
    assert d3["gold_place_in_context"] == 0.0  # its answer is in the guide, which was not asked
    bad = CliRunner().invoke(app, ["eval", "--data", str(questions), "--only", "manual.md", "--no-judge"])
    assert bad.exit_code == 2 and "give --docs too" in bad.stderr


def test_a_questions_split_is_a_hash_of_its_id_and_a_file_of_ids_selects_its_own(folder, tmp_path):
    from ragnet.eval.run.question_splits import split_of

    _, path = folder
    every = load_doc_questions(path)
    assert [q.split for q in every] == [split_of(q.id) for q in every]
    tune, check = load_doc_questions(path, split="tune"), load_doc_questions(path, split="check")
    assert sorted(q.id for q in tune + check) == ["d1", "d2", "d3"] and not {q.id for q in tune} & {q.id for q in check}
    # adding questions never moves one between splits: 60% of a thousand ids fall in tune, give or take
    shares = [split_of(f"q-{i}") == "tune" for i in range(1000)]
    assert 0.55 < sum(shares) / 1000 < 0.65 and split_of("d1") == split_of("d1")
    listed = tmp_path / "mine.txt"
    listed.write_text("# my split\nd3\n\nd1  # two of them\n", encoding="utf-8")
    assert [q.id for q in load_doc_questions(path, split=str(listed))] == ["d1", "d3"]
    listed.write_text("d9\n", encoding="utf-8")
    with pytest.raises(InputError, match="unknown question id.*d9"):
        load_doc_questions(path, split=str(listed))
    with pytest.raises(InputError, match="no such split file"):
        load_doc_questions(path, split="tunes")


def test_eval_docs_runs_one_split_and_every_row_says_its_split(folder, tmp_path, monkeypatch):
    from ragnet.eval.run.question_splits import split_of

    _, out = _eval_docs(folder, tmp_path, monkeypatch, "out", "--strategies", "basic", "--lm", "scripted",
                        "--split", "check")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows and {r["id"] for r in rows} == {q for q in ("d1", "d2", "d3") if split_of(q) == "check"}
    assert {r["split"] for r in rows} == {"check"}


@pytest.mark.parametrize("question, message", [("x" * 4001, "longer than 4,000 characters (4,001)"),
                                               ("\u200b\u200b", "empty")])
def test_a_question_too_long_for_the_lm_or_invisible_is_refused_naming_its_line(tmp_path, question, message):
    from ragnet.eval.run.datasets import load_eval_set

    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "ok", "question": "q?", "answers": ["a"]}\n'
                    + json.dumps({"id": "big", "question": question, "answers": ["a"]}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)) as err:
        load_doc_questions(path)
    assert "q.jsonl:2" in str(err.value)
    with pytest.raises(InputError, match=re.escape(message)):  # a benchmark-format file too, as serve bounds it
        load_eval_set(path, split=None)
