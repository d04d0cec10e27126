"""Asking some of an index's files (Index.scoped, ask/search --only): every search of a program keeps
to them, the catalog adds none of the others, and a scope that matches nothing is refused by name."""

from __future__ import annotations

import json

import dspy
import pytest
from typer.testing import CliRunner

from ragnet import Index, load_documents
from ragnet.cli import app
from ragnet.errors import InputError
from ragnet.index.scope import ScopedIndex, matches_file
from tests.corpus.make_files import write
from tests.programs.scripted import ProgramLM

SED = """# sed manual

## Options

The --sandbox option rejects scripts that use the e, w or r commands.

## Addresses

The address first~step matches every step-th line starting with line first.
"""
GREP = """# grep manual

## Options

The --max-count option stops reading a file after NUM selected lines.

## Exit status

The exit status is 0 if a line is selected and 1 if no lines were selected.
"""
NOTES = "Team notes: the sandbox in our lab is the test machine, and grep is installed there.\n"


@pytest.fixture(scope="module")
def manuals(tmp_path_factory):
    root = tmp_path_factory.mktemp("scope")
    docs = root / "docs"
    write(docs / "gnu" / "sed.md", SED)
    write(docs / "gnu" / "grep.md", GREP)
    write(docs / "notes.txt", NOTES)
    index = Index.build(load_documents([docs]), root / "idx", show_progress=False)
    return index


def test_a_pattern_names_a_path_a_file_name_a_folder_or_a_glob():
    assert matches_file("gnu/sed.md", "gnu/sed.md") and matches_file("gnu/sed.md", "sed.md")
    assert matches_file("gnu/sed.md", "gnu") and matches_file("gnu/sed.md", "gnu/*.md")
    assert not matches_file("gnu/sed.md", "sed") and not matches_file("gnu/sed.md", "gn")
    assert not matches_file("gnu/sed.md", "") and not matches_file("notes.txt", "gnu")


def test_searches_keep_to_the_chosen_files_and_ids_stay_whole(manuals):
    scoped = manuals.scoped("grep.md")
    assert isinstance(scoped, ScopedIndex) and scoped.files == ["gnu/grep.md"]
    everywhere = {c.doc_id for c in manuals.search("sandbox rejects scripts", k=10)}
    assert {"gnu/sed.md", "notes.txt"} <= everywhere  # unscoped, the sandbox lines lead
    hits = scoped.search("sandbox rejects scripts", k=10)
    assert hits and {c.doc_id for c in hits} == {"gnu/grep.md"}
    batch = scoped.search_batch(["sandbox", "exit status"], k=3, exclude=[None, [hits[0].id]])
    assert all(c.doc_id == "gnu/grep.md" for hits_ in batch for c in hits_)
    assert hits[0].id not in {c.id for c in batch[1]}  # the caller's own exclusions still hold
    assert {c.doc_id for c in scoped.bm25_search("sandbox lab test machine grep", k=5)} <= {"gnu/grep.md"}
    assert {c.doc_id for c in scoped.dense_search("sandbox", k=5)} == {"gnu/grep.md"}
    # everything else is the whole index's: a chunk of another file is still found by id
    sed_chunk = next(c for c in manuals.chunks if c.doc_id == "gnu/sed.md")
    assert sed_chunk.id in scoped and scoped.get([sed_chunk.id])[0].text == sed_chunk.text
    assert not scoped.in_scope(sed_chunk.id) and len(scoped) == len(manuals)


def test_the_catalog_adds_only_chosen_chunks(manuals):
    scoped = manuals.scoped("gnu")
    matches = manuals.catalog.matches({"entities": ["team notes"]}) + manuals.catalog.matches({"entities": ["sed manual"]})
    kept = scoped.catalog.matches({"entities": ["team notes"]}) + scoped.catalog.matches({"entities": ["sed manual"]})
    assert all(scoped.in_scope(cid) for cid, _, _ in kept)
    assert len(kept) <= len(matches)
    assert scoped.catalog.by_title is manuals.catalog.by_title  # title lookups stay whole


def test_a_scope_that_matches_no_file_is_refused_naming_the_files(manuals):
    with pytest.raises(InputError) as err:
        manuals.scoped("nginx.pdf")
    message = str(err.value)
    assert "no indexed file matches 'nginx.pdf'" in message and "gnu/grep.md" in message and "notes.txt" in message
    with pytest.raises(InputError, match="at least one file"):
        manuals.scoped(" ")
    from ragnet.index.scope import MAX_PATTERN

    with pytest.raises(InputError, match="no indexed file matches"):  # the longest pattern taken
        manuals.scoped("g" * MAX_PATTERN)
    with pytest.raises(InputError, match=f"longer than {MAX_PATTERN} characters"):
        manuals.scoped("g" * (MAX_PATTERN + 1))


def test_a_program_over_a_scope_reads_and_cites_the_chosen_file_only(manuals):
    from ragnet.programs.registry import build_program

    def answer(prompt: str, n: int):
        return {"answer": "--max-count", "evidence_ids": ["c1"]}

    program = build_program("oneshot:sentences+hops", manuals.scoped("gnu/grep.md"), budget=1000)
    with dspy.context(lm=ProgramLM(answer=answer).lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        pred = program(question="Which option rejects scripts that use the e, w or r commands?")
    assert pred.context and all(cid.startswith("gnu/grep.md#") for cid in pred.context)
    assert all(c["file"] == "gnu/grep.md" for c in pred.citations)
    searches = [e for e in pred.trace if e.get("step") == "search"]
    assert all(rid.startswith("gnu/grep.md#") for e in searches for rid in e.get("retrieved", []))


def test_search_only_prints_the_chosen_files_and_names_a_bad_scope(manuals):
    runner = CliRunner()
    result = runner.invoke(app, ["search", "sandbox", "--index", str(manuals.path), "--only", "notes.txt", "--json"])
    assert result.exit_code == 0, result.output
    assert {h["doc_id"] for h in json.loads(result.stdout)} == {"notes.txt"}
    bad = runner.invoke(app, ["search", "sandbox", "--index", str(manuals.path), "--only", "nope/*"])
    assert bad.exit_code == 2 and "no indexed file matches 'nope/*'" in bad.stderr


def test_ask_only_answers_from_the_chosen_files_and_says_which(manuals, tmp_path):
    from tests.lm.fault_server import FaultServer

    reply = '[[ ## answer ## ]]\n0\n\n[[ ## evidence_ids ## ]]\n["c1"]\n\n[[ ## completed ## ]]'
    with FaultServer("ok", reply=reply) as server:
        result = CliRunner().invoke(app, ["ask", "What is the exit status when a line is selected?", "--index",
                                          str(manuals.path), "--strategy", "basic", "--only", "gnu/grep.md",
                                          "--lm", "openai/test-model", "--api-base", server.url, "--api-key", "k",
                                          "--timeout", "5", "--json"],
                                    env={"RAGNET_CACHE_DIR": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    pred = json.loads(result.stdout)
    assert pred["context"] and all(cid.startswith("gnu/grep.md#") for cid in pred["context"])
    with FaultServer("ok", reply=reply) as server:
        shown = CliRunner().invoke(app, ["ask", "What is the exit status?", "--index", str(manuals.path),
                                         "--strategy", "basic", "--only", "gnu", "--lm", "openai/test-model",
                                         "--api-base", server.url, "--api-key", "k", "--timeout", "5"],
                                   env={"RAGNET_CACHE_DIR": str(tmp_path / "cache")})
    assert shown.exit_code == 0, shown.output
    assert "asked over: gnu/grep.md, gnu/sed.md" in shown.stdout


def test_the_local_budget_follows_the_chosen_files(manuals):
    from ragnet.programs.registry import SECTIONED_LOCAL_BUDGET, has_sections, resolve_strategy

    assert has_sections(manuals) and has_sections(manuals.scoped("gnu"))
    assert not has_sections(manuals.scoped("notes.txt"))  # plain text: no heading path
    local = "local:qwen2.5-coder-1.5b"
    assert resolve_strategy("auto", None, local, manuals.scoped("gnu"))[1] == SECTIONED_LOCAL_BUDGET
    assert resolve_strategy("auto", None, local, manuals.scoped("notes.txt"))[1] == 1000


def test_a_scope_is_scored_whole_and_a_large_one_by_a_filtered_search(manuals, monkeypatch):
    import ragnet.index.hybrid as hybrid

    scoped = manuals.scoped("gnu")
    exact = scoped.search("which option stops after NUM selected lines", k=10)
    rows = [r for r, c in enumerate(manuals.chunks) if c.doc_id.startswith("gnu/")]
    assert sorted(manuals.rows([c.id for c in exact]).tolist()) == rows  # every chunk of the scope, scored
    assert exact[0].doc_id == "gnu/grep.md" and exact[0].score == 1.0
    monkeypatch.setattr(hybrid, "EXACT_WITHIN", 1)  # the same scope, searched with the other files filtered out
    filtered = scoped.search("which option stops after NUM selected lines", k=10)
    assert {c.id for c in filtered} == {c.id for c in exact} and filtered[0].id == exact[0].id
    batch = scoped.search_batch(["stops after NUM selected lines", "sandbox"], k=2)
    assert all(c.doc_id.startswith("gnu/") for hits in batch for c in hits)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf", "ivfpq"])
def test_a_large_scope_draws_its_whole_pool_from_its_own_chunks(tmp_path, docs, embedder, monkeypatch, kind):
    """Past EXACT_WITHIN a scope is searched like the whole index, FAISS and BM25 filtering the other
    rows out; a pool of 2 still yields k chunks, all in the scope, the best of them first."""
    import ragnet.index.hybrid as hybrid
    from ragnet.index import DenseOptions
    from ragnet.index.ivfpq import IVFPQParams

    dense = DenseOptions(kind=kind, ivfpq=IVFPQParams(nlist=2, m=8, nbits=4, nprobe=2) if kind == "ivfpq" else None)
    index = Index.build(docs, tmp_path / "idx", embedder=embedder, dense=dense, show_progress=False)
    scoped = index.scoped("doc1*")  # documents doc10 .. doc19, by id (made in Python: no source file)
    query = "a string instrument played with a bow"  # the violin, doc19
    exact = scoped.search(query, k=5)
    monkeypatch.setattr(hybrid, "EXACT_WITHIN", 1)
    asked, dense_top = [], index._dense_top
    monkeypatch.setattr(index, "_dense_top",
                        lambda qvecs, n, within=None: asked.append(n) or dense_top(qvecs, n, within))
    for hits in (scoped.search(query, k=5, pool=2), scoped.search_batch([query], k=5, pool=2)[0]):
        assert len(hits) == 5 and all(h.doc_id.startswith("doc1") for h in hits)
        assert hits[0].doc_id == exact[0].doc_id == "doc19"
    assert asked == [5, 5]  # max(pool, k): the pool does not grow by the chunks outside the scope
    assert index.search(query, k=5, pool=2, within=scoped.rows_in_scope,
                        exclude=[exact[0].id])[0].doc_id != "doc19"  # an excluded chunk stays out


def test_a_scope_reads_its_rows_from_the_sources_file_and_distrusts_a_wrong_one(tmp_path):
    from ragnet.index.scope import _rows_from_chunks, _rows_from_sources
    from ragnet.index.sources import SOURCES

    docs = tmp_path / "docs"
    write(docs / "gnu" / "sed.md", SED)
    write(docs / "gnu" / "grep.md", GREP)
    write(docs / "notes.txt", NOTES)
    built = CliRunner().invoke(app, ["index", str(docs), "--out", str(tmp_path / "idx")])
    assert built.exit_code == 0, built.output
    index = Index.load(tmp_path / "idx")
    from_sources = _rows_from_sources(index, ["gnu/*.md"])
    assert from_sources is not None and from_sources == _rows_from_chunks(index, ["gnu/*.md"])
    assert index.scoped("gnu/*.md").files == ["gnu/grep.md", "gnu/sed.md"]
    # rows that do not hold the documents the file names: the chunks are read instead
    path = tmp_path / "idx" / SOURCES
    data = json.loads(path.read_text())
    data["docs"] = [[i, sha, row + 1, n] for i, sha, row, n in data["docs"]]
    path.write_text(json.dumps(data))
    assert _rows_from_sources(index, ["gnu/*.md"]) is None
    assert index.scoped("gnu/*.md").rows_in_scope.tolist() == from_sources[1]
