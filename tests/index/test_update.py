"""Incremental index updates (``Index.sync`` / ``ragnet index`` on an index, ``Index.update``,
``Index.remove``): equal to a full build, only what changed is read and embedded, removed documents
leave every store, atomic under ``kill -9``, one writer at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragnet.corpus.types import Document
from ragnet.errors import InputError
from ragnet.index import DenseOptions, Index, IVFPQParams
from ragnet.index.sources import Sources
from tests.index.conftest import QUERIES, _FACTS

FACTS = [text for _, text in _FACTS]
SIZES = {"chunk_tokens": 40, "overlap": 8}  # several chunks per document, so a change shifts some, not all
# stores whose bytes must equal a full build's; the vectors are compared with a tolerance (other batches)
FLOAT_FILES = {"embeddings.npy", "vectors.f16.npy", "dense.faiss", "dense.ivfdata", "sentences/vectors.npy",
               "manifest.json"}
PROGRAMS = ["basic", "oneshot", "oneshot:sentences+hops", "iterative:sentences", "router"]
QUESTIONS = ["Who discovered penicillin, and when?", "Which river runs through the capital of France?"]


def write_folder(folder: Path, files: dict[str, str]) -> None:
    """Make ``folder`` hold exactly ``files`` (relative name -> text)."""
    for old in [p for p in folder.rglob("*") if p.is_file()]:
        if old.relative_to(folder).as_posix() not in files:
            old.unlink()
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def sync(folder: Path, out: Path, embedder, **options):
    return Index.sync(folder, out, embedder=embedder, show_progress=False, **{**SIZES, **options})


def contexts(index: Index) -> list:
    """Every program's context (ids and texts) for the fixed questions, with a scripted LM."""
    import dspy

    from ragnet.programs.registry import build_program
    from tests.programs.scripted import ProgramLM

    out = []
    with dspy.context(lm=ProgramLM().lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        for spec in PROGRAMS:
            program = build_program(spec, index, budget=600)
            for q in QUESTIONS:
                pred = program(question=q)
                out.append((list(pred.context), pred.passages, pred.citations))
    return out


def assert_same_index(upd: Index, full: Index) -> None:
    """``upd`` (after updates) equals ``full`` (a fresh full build of the same folder)."""
    assert [c.to_dict() for c in upd.chunks] == [c.to_dict() for c in full.chunks]
    files_u, files_f = upd.manifest["files"], full.manifest["files"]
    assert sorted(files_u) == sorted(files_f)
    for name in files_u:
        if name not in FLOAT_FILES:
            assert files_u[name] == files_f[name], name  # chunks, catalog, BM25, sentences, sources: same bytes
    for key in ("chunk_count", "doc_count", "faiss_index", "sentences", "chunk_tokens", "overlap"):
        assert upd.manifest[key] == full.manifest[key], key
    ids = [c.id for c in full.chunks]
    np.testing.assert_allclose(upd.vectors(ids), full.vectors(ids), atol=1e-5)
    np.testing.assert_allclose(np.asarray(upd.sentences.vectors, dtype=np.float32),
                               np.asarray(full.sentences.vectors, dtype=np.float32), atol=2e-3)
    for q in QUERIES:
        a, b = upd.search(q, k=10), full.search(q, k=10)
        assert [c.id for c in a] == [c.id for c in b], q
        np.testing.assert_allclose([c.score for c in a], [c.score for c in b], atol=1e-5)
        np.testing.assert_allclose([c.bm25_score for c in a], [c.bm25_score for c in b], atol=1e-5)
    assert contexts(upd) == contexts(full)


# ------------------------------------------------------------------ equal to a full build
texts = st.lists(st.sampled_from(FACTS), min_size=1, max_size=4).map(" ".join)
records = st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3", "r4"]), texts), min_size=1, max_size=3,
                   unique_by=lambda r: r[0]).map(
    lambda rs: "".join(json.dumps({"id": i, "title": i.upper(), "text": t}) + "\n" for i, t in rs))
folders = st.fixed_dictionaries({}, optional={"a.md": texts.map(lambda t: "# Alpha\n\n" + t), "b.txt": texts,
                                              "sub/c.md": texts, "sub/d.txt": texts, "e.jsonl": records}
                                ).filter(bool)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states=st.lists(folders, min_size=2, max_size=3))
def test_updates_equal_a_full_build(states, embedder):
    """Random folders in sequence (files added, changed, removed; JSONL records changed): after
    each update the index equals a full build of the folder as it is."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = tmp / "docs"
        folder.mkdir()
        write_folder(folder, states[0])
        sync(folder, tmp / "upd", embedder)
        for state in states[1:]:
            write_folder(folder, state)
            upd, report = sync(folder, tmp / "upd", embedder)
            assert not report.full_build
            full, _ = sync(folder, tmp / "full", embedder, rebuild=True)
            assert_same_index(upd, full)
            assert report.chunks_embedded + report.chunks_reused == len(full)


def test_only_changed_files_are_read_and_only_new_passages_embedded(tmp_path, embedder, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    files = {f"f{i}.md": f"# File {i}\n\n" + " ".join(FACTS[3 * i:3 * i + 3]) for i in range(6)}
    write_folder(folder, files)
    first, report = sync(folder, tmp_path / "idx", embedder)
    assert report.full_build and report.load.files_read == 6
    read: list[str] = []
    from ragnet.corpus import loader

    real_read = loader._read
    monkeypatch.setattr(loader, "_read", lambda source, *a: read.append(source.rel_id) or real_read(source, *a))
    embedded: list[str] = []
    real_encode = type(embedder).encode
    monkeypatch.setattr(type(embedder), "encode", lambda self, texts, **k: embedded.extend(texts) or real_encode(self, texts, **k))

    files["f2.md"] = files["f2.md"] + " " + FACTS[29]  # a sentence added at the end
    files["g.md"] = "# New\n\n" + FACTS[28]
    del files["f4.md"]
    write_folder(folder, files)
    idx, report = sync(folder, tmp_path / "idx", embedder)
    assert sorted(read) == ["f2.md", "g.md"]  # unchanged files are hashed, not read
    assert (report.added, report.changed, report.removed, report.unchanged) == (1, 1, 1, 4)
    assert report.line().startswith("+1 file, ~1 changed, -1 removed (4 unchanged); ")
    changed = [c for c in idx.chunks if c.doc_id in ("f2.md", "g.md")]
    # the changed file's first chunks are the same passages as before: their vectors are reused
    assert 0 < report.chunks_embedded < len(changed)
    assert report.chunks_reused == len(idx) - report.chunks_embedded
    assert all(not t.startswith(("# File 0", "File 0")) for t in embedded)
    assert "f4.md" not in {c.doc_id for c in idx.chunks}
    # nothing changed: nothing read, nothing written
    read.clear()
    before = (tmp_path / "idx" / "manifest.json").read_bytes()
    again, report = sync(folder, tmp_path / "idx", embedder)
    assert not report.written and read == [] and report.unchanged == 6
    assert (tmp_path / "idx" / "manifest.json").read_bytes() == before


def test_a_removed_file_leaves_every_store(tmp_path, embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    files = {"keep.md": "# Keep\n\n" + " ".join(FACTS[:4]),
             "gone.md": "# Gone\n\nThe zorblatt quasicrystal hums at dawn. Zorblatt owners polish it weekly."}
    write_folder(folder, files)
    sync(folder, tmp_path / "idx", embedder)
    del files["gone.md"]
    write_folder(folder, files)
    idx, report = sync(folder, tmp_path / "idx", embedder)
    assert report.removed == 1
    assert all(c.doc_id == "keep.md" for c in idx.chunks)
    assert idx.bm25_search("zorblatt", k=5) == []  # BM25: the term is gone from the vocabulary
    assert "zorblatt" not in idx.sparse._vocab
    assert idx.vectors([c.id for c in idx.chunks]).shape[0] == len(idx) == idx._dense.ntotal
    assert len(idx.sentences.offsets) == len(idx) + 1
    assert all(idx.catalog is not None for _ in [0])
    assert "gone.md" not in Sources.load(idx.path).files and "gone.md" not in Sources.load(idx.path).docs
    assert Index.load(idx.path, verify=True).manifest["doc_count"] == 1


def test_ivfpq_update_keeps_the_quantizers_and_drops_removed_rows(tmp_path, embedder):
    docs = [Document(id=f"d{i}", title=t, text=" ".join([x] * 3)) for i, (t, x) in enumerate(_FACTS)]
    params = IVFPQParams(nlist=2, m=8, nbits=4, nprobe=2)
    idx = Index.build(docs, tmp_path / "idx", embedder=embedder, dense=DenseOptions(kind="ivfpq", ivfpq=params),
                      show_progress=False, **SIZES)
    assert idx.manifest["faiss_index"] == "ivfpq"
    centroids = idx._dense.index  # noqa: F841 - the trained index before the update
    report = idx.remove(["d3", "d7"], show_progress=False)
    assert report.removed == 2 and idx.manifest["faiss_index"] == "ivfpq"
    assert idx._dense.ntotal == len(idx) and {c.doc_id for c in idx.chunks}.isdisjoint({"d3", "d7"})
    hits = idx.search("Madrid museum of fine art", k=len(idx))
    assert "d3" not in {h.doc_id for h in hits} and len(hits) == len(idx)
    assert Index.load(idx.path, verify=True).manifest["ivfpq"] == idx.manifest["ivfpq"]


# ------------------------------------------------------------------ the Python API
def test_update_and_remove_in_python(tmp_path, embedder):
    docs = [Document(id=f"d{i}", title=t, text=x) for i, (t, x) in enumerate(_FACTS[:6])]
    idx = Index.build(docs, tmp_path / "idx", embedder=embedder, show_progress=False)
    report = idx.update([Document(id="new", title="Zebra", text="Zebras have black and white stripes.")],
                        remove_missing=False, embedder=embedder, show_progress=False)
    assert (report.added, report.removed, report.unchanged, report.chunks_embedded) == (1, 0, 6, 1)
    assert idx.search("striped animal", k=1)[0].doc_id == "new"  # the object reads the new index
    assert [c.doc_id for c in idx.chunks][-1] == "new"
    report = idx.remove(["d0", "new"], show_progress=False)
    assert report.removed == 2 and len(idx) == 5 and report.chunks_embedded == 0
    with pytest.raises(InputError, match=r"not a file or document of the index .*'nope'.*nothing was removed"):
        idx.remove("nope", show_progress=False)
    with pytest.raises(InputError, match="removes every document"):
        idx.remove([f"d{i}" for i in range(1, 6)], show_progress=False)
    # the full collection: equal to a full build of it
    final = docs[2:] + [Document(id="d1", title="Berlin", text="Berlin is a city of bridges.")]
    idx.update(final, embedder=embedder, show_progress=False)
    full = Index.build(final, tmp_path / "full", embedder=embedder, show_progress=False)
    assert [c.to_dict() for c in idx.chunks] == [c.to_dict() for c in full.chunks]
    assert [h.id for h in idx.search("city of bridges", k=3)] == [h.id for h in full.search("city of bridges", k=3)]
    with pytest.raises(InputError, match="duplicate document id"):
        idx.update([final[0], final[0]], show_progress=False)


def test_another_ragnet_s_chunking_means_every_file_is_read_again(tmp_path, embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    write_folder(folder, {"a.md": "# A\n\n" + FACTS[0], "b.md": "# B\n\n" + FACTS[1]})
    sync(folder, tmp_path / "idx", embedder)
    path = tmp_path / "idx" / "sources.json"
    data = json.loads(path.read_text())
    data["code"] = "0" * 64  # as an older ragnet, whose readers or chunking differ, would have written
    path.write_text(json.dumps(data))
    idx, report = sync(folder, tmp_path / "idx", embedder)
    assert report.changed == 2 and report.unchanged == 0 and report.load.files_read == 2  # read again
    assert report.chunks_embedded == 0 and "read or chunked files differently" in report.note  # vectors reused
    assert Sources.load(idx.path).files  # recorded again, with this ragnet's fingerprint
    assert not sync(folder, tmp_path / "idx", embedder)[1].written


def test_an_index_without_sources_is_updated_reusing_vectors(tmp_path, embedder):
    docs = [Document(id=f"d{i}", title=t, text=x) for i, (t, x) in enumerate(_FACTS[:5])]
    idx = Index.build(docs, tmp_path / "idx", embedder=embedder, show_progress=False)
    (tmp_path / "idx" / "sources.json").write_text("{not json")  # an older index, or a damaged record
    report = Index.load(tmp_path / "idx", verify=False).update(docs[:4], embedder=embedder, show_progress=False)
    assert report.chunks_embedded == 0 and report.chunks_reused == 4 and report.removed == 1


# ------------------------------------------------------------------ ragnet index
def test_cli_updates_refuses_changed_options_and_rebuilds(tmp_path):
    from typer.testing import CliRunner

    from ragnet.cli import app

    folder = tmp_path / "docs"
    folder.mkdir()
    write_folder(folder, {"a.md": "# A\n\n" + FACTS[0], "b.md": "# B\n\n" + FACTS[1]})
    out = tmp_path / "idx"
    run = lambda *a: CliRunner().invoke(app, ["index", str(folder), "--out", str(out), "--no-sentences", *a])  # noqa: E731
    first = run()
    assert first.exit_code == 0 and "indexed 2 documents as 2 chunks" in first.output
    write_folder(folder, {"a.md": "# A\n\n" + FACTS[2], "c.md": "# C\n\n" + FACTS[3]})
    second = run()
    assert second.exit_code == 0, second.output
    assert "+1 file, ~1 changed, -1 removed (0 unchanged); 2 chunks embedded, 0 reused -> " in second.output
    for args, option in ((["--chunk-tokens", "64"], "chunk-tokens"), (["--faiss-index", "hnsw"], "faiss-index"),
                         (["--embedder", "sentence-transformers/all-mpnet-base-v2"], "embedder")):
        refused = run(*args)
        assert refused.exit_code == 2, refused.output
        lines = [line for line in refused.output.splitlines() if line.strip()]
        assert len(lines) == 1 and f"argument '{option}'" in lines[0] and "--rebuild" in lines[0]
    refused = CliRunner().invoke(app, ["index", str(folder), "--out", str(out)])  # --sentences, the default
    assert refused.exit_code == 0  # not given: the index's setting (no sentences) is kept
    rebuilt = run("--chunk-tokens", "64", "--rebuild")
    assert rebuilt.exit_code == 0 and "indexed 2 documents" in rebuilt.output
    assert Index.load(out).manifest["chunk_tokens"] == 64


# ------------------------------------------------------------------ atomic and locked
_KILL_SCRIPT = """
import os, sys, time
from pathlib import Path
point, folder, target = sys.argv[1:]

def pause(name):
    print(name, flush=True)
    time.sleep(120)

if point == "embedding":
    import ragnet.index.update as u
    real = u.embed_unique
    u.embed_unique = lambda *a, **k: pause(point) or real(*a, **k)
elif point == "writing":
    from ragnet.index.writer import IndexWriter
    real_finish = IndexWriter.finish
    IndexWriter.finish = lambda self: pause(point) or real_finish(self)
elif point == "manifest":
    import ragnet.index.build as ib
    ib.usual_permissions = lambda *a, **k: pause(point)
elif point == "swap":
    import ragnet._atomic as at
    real_replace = os.replace
    def replace(src, dst):
        real_replace(src, dst)
        if Path(dst).name.startswith(".idx.old-"):
            pause(point)
    at.os.replace = replace
from ragnet.index import Index
Index.sync(folder, target, chunk_tokens=40, overlap=8, show_progress=False)
"""


@pytest.mark.parametrize("point", ["embedding", "writing", "manifest", "swap"])
def test_an_update_killed_at_any_point_leaves_the_previous_index(tmp_path, embedder, point):
    folder = tmp_path / "docs"
    folder.mkdir()
    write_folder(folder, {"a.md": "# A\n\n" + FACTS[0], "b.md": "# B\n\n" + FACTS[1]})
    target = tmp_path / "idx"
    sync(folder, target, embedder)
    before = {q: [(h.id, round(h.score, 6)) for h in Index.load(target).search(q, k=3)] for q in QUERIES}
    write_folder(folder, {"a.md": "# A\n\n" + FACTS[5], "c.md": "# C\n\n" + FACTS[6]})
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, point, str(folder), str(target)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == point
    finally:
        proc.kill()  # SIGKILL: no cleanup runs
        proc.wait()
    if point != "swap":
        idx = Index.load(target, verify=True)  # whole: every checksum holds
        assert {q: [(h.id, round(h.score, 6)) for h in idx.search(q, k=3)] for q in QUERIES} == before
    else:  # killed between the two renames: the old index sits aside, and the next reader puts it back
        assert not target.exists()
        idx = Index.load(target, verify=True)  # before: "no index at ...", until the next `ragnet index`
        assert {q: [(h.id, round(h.score, 6)) for h in idx.search(q, k=3)] for q in QUERIES} == before
        assert target.is_dir() and not list(tmp_path.glob(".idx.old-*"))
        idx.chunks.close()
    idx, report = sync(folder, target, embedder)
    assert not report.full_build and (report.added, report.changed, report.removed) == (1, 1, 1)
    assert sorted({c.doc_id for c in idx.chunks}) == ["a.md", "c.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "idx"]  # leftovers cleaned


def test_a_second_update_at_once_is_refused(tmp_path, embedder, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    write_folder(folder, {"a.md": "# A\n\n" + FACTS[0]})
    target = tmp_path / "idx"
    sync(folder, target, embedder)
    write_folder(folder, {"a.md": "# A\n\n" + FACTS[1]})
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from ragnet._atomic import dir_lock
        with dir_lock({str(target)!r}):
            print("locked", flush=True)
            time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.perf_counter()
        with pytest.raises(InputError, match=rf"another ragnet process \(pid {holder.pid}\) is writing") as err:
            sync(folder, target, embedder)
        assert "\n" not in str(err.value) and time.perf_counter() - t0 < 5
    finally:
        holder.kill()
        holder.wait()
    # two threads of one process: the second is refused while the first embeds
    import ragnet.index.update as update

    started, release = threading.Event(), threading.Event()
    real = update.embed_unique

    def slow(*a, **k):
        started.set()
        release.wait(30)
        return real(*a, **k)

    monkeypatch.setattr(update, "embed_unique", slow)
    first = threading.Thread(target=lambda: sync(folder, target, embedder))
    first.start()
    try:
        assert started.wait(30)
        with pytest.raises(InputError, match="another update of this index is running in this process"):
            sync(folder, target, embedder)
    finally:
        release.set()
        first.join()
    assert Index.load(target).chunks[0].text.endswith(FACTS[1])
