"""ONNX Runtime backends of Embedder: same vectors as torch, exported once into the cache, reused.

The tests marked slow share one export (fp32 + int8) of the bundled model into a temporary cache.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ragnet.errors import InputError, MissingDependencyError  # noqa: E402
from ragnet.index import Embedder, Index  # noqa: E402
from ragnet.index import onnx_backend as ob  # noqa: E402
from ragnet.bench.index_timings import run_embed_bench  # noqa: E402
from ragnet.index.embedder import DEFAULT_MODEL_NAME, bundled_model_path  # noqa: E402

from .conftest import QUERIES, make_docs  # noqa: E402


def _real_texts(n: int = 50, n_questions: int = 10) -> tuple[list[str], list[str]]:
    """``n`` HotpotQA paragraphs and ``n_questions`` of its questions (the test corpus if the data is absent)."""
    data = Path(os.environ.get("RAGNET_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
    path = data / "hotpotqa_dev_distractor" / "questions.jsonl"
    if not path.is_file():
        return [f"{d.title}\n{d.text}" for d in make_docs()], list(QUERIES)
    texts: list[str] = []
    questions: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            questions.append(row["question"])
            texts.extend(f"{c['title']}\n{c['text']}" for c in row["context"])
            if len(texts) >= n:
                break
    return texts[:n], questions[:n_questions]


TEXTS, QUESTIONS = _real_texts()


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """A private export cache for this module, with export calls counted."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    calls = {"fp32": 0, "int8": 0}
    real_fp32, real_int8 = ob._export_fp32, ob._export_int8

    def fp32(*args, **kwargs):
        calls["fp32"] += 1
        return real_fp32(*args, **kwargs)

    def int8(*args, **kwargs):
        calls["int8"] += 1
        return real_int8(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ob, "_export_fp32", fp32)
        mp.setattr(ob, "_export_int8", int8)
        yield cache, calls


@pytest.fixture(scope="module")
def torch_vecs(embedder):
    return embedder.encode(TEXTS), embedder.encode_queries(QUESTIONS)


@pytest.fixture(scope="module")
def onnx_emb(exports):
    return Embedder(backend="onnx", cache_dir=exports[0]).load()


@pytest.fixture(scope="module")
def int8_emb(exports):
    return Embedder(backend="onnx-int8", cache_dir=exports[0]).load()


def _top5(queries: np.ndarray, docs: np.ndarray) -> np.ndarray:
    return np.argsort(-(queries @ docs.T), axis=1, kind="stable")[:, :5]


@pytest.mark.slow
def test_fp32_vectors_match_torch(onnx_emb, torch_vecs):
    docs, queries = onnx_emb.encode(TEXTS), onnx_emb.encode_queries(QUESTIONS)
    assert docs.shape == torch_vecs[0].shape and docs.dtype == np.float32
    assert (docs * torch_vecs[0]).sum(1).min() > 0.9999
    assert (queries * torch_vecs[1]).sum(1).min() > 0.9999
    np.testing.assert_array_equal(_top5(queries, docs), _top5(torch_vecs[1], torch_vecs[0]))


@pytest.mark.slow
def test_int8_vectors_close_to_torch(int8_emb, torch_vecs):
    docs, queries = int8_emb.encode(TEXTS), int8_emb.encode_queries(QUESTIONS)
    assert int8_emb._onnx.path.name == ob.int8_file(ob.int8_flavour())
    assert (docs * torch_vecs[0]).sum(1).min() > 0.98
    assert (queries * torch_vecs[1]).sum(1).min() > 0.98
    got, want = _top5(queries, docs), _top5(torch_vecs[1], torch_vecs[0])
    overlap = [len(set(g) & set(w)) / 5 for g, w in zip(got, want)]
    assert np.mean(overlap) >= 0.8 and min(overlap) >= 0.6
    assert np.array_equal(got[:, 0], want[:, 0]) or np.mean(got[:, 0] == want[:, 0]) >= 0.9


@pytest.mark.slow
@pytest.mark.parametrize("which", ["onnx_emb", "int8_emb"])
def test_single_query_path_matches_batch(request, which):
    emb = request.getfixturevalue(which)
    assert emb._onnx.single_ok  # the direct unpadded path is in use for this model
    emb.clear_cache()
    for q in [*QUESTIONS[:4], "a", "long " * 400]:
        single = emb.encode_query(q)
        assert single.shape == (384,) and single.dtype == np.float32
        np.testing.assert_allclose(single, emb.encode_queries([q])[0], atol=1e-5)
    # the query cache still answers repeated queries, with a copy
    cached = emb.encode_query(QUESTIONS[0])
    cached[:] = 0
    assert QUESTIONS[0] in emb._cache and np.linalg.norm(emb.encode_query(QUESTIONS[0])) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_export_happens_once_and_is_reused(exports, onnx_emb, int8_emb, monkeypatch):
    cache, calls = exports
    folder = onnx_emb._onnx.folder
    assert folder.parent == cache and folder.name.startswith("sentence-transformers-all-minilm-l6-v2-")
    assert int8_emb._onnx.folder == folder
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert {ob.FP32_FILE, ob.TOKENIZER_FILE, ob.EXPORT_META, ob.int8_file(ob.int8_flavour())} <= set(before)
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]  # no temporary leftovers
    # a fresh process state: nothing in memory, so the encoders must come from the folder
    monkeypatch.setattr(ob, "_ENCODERS", {})
    monkeypatch.setattr(ob, "_SESSIONS", {})
    for backend in ("onnx", "onnx-int8"):
        again = Embedder(backend=backend, cache_dir=cache).load()
        assert again._model is None  # the torch model was not needed
        np.testing.assert_allclose(again.encode(TEXTS[:3]), {"onnx": onnx_emb, "onnx-int8": int8_emb}[backend]
                                   .encode(TEXTS[:3]), atol=1e-6)
    assert calls == {"fp32": 1, "int8": 1}
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before


@pytest.mark.slow
def test_read_only_model_folder_is_left_untouched(tmp_path):
    src = tmp_path / "minilm"
    shutil.copytree(bundled_model_path(), src)
    for path in [src, *src.rglob("*")]:
        path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH | (stat.S_IXUSR if path.is_dir() else 0))
    before = sorted((str(p.relative_to(src)), p.stat().st_mtime_ns) for p in src.rglob("*"))
    cache = tmp_path / "cache"
    try:
        emb = Embedder(src, backend="onnx", cache_dir=cache)
        ref = Embedder(src)
        np.testing.assert_allclose(emb.encode(TEXTS[:4]), ref.encode(TEXTS[:4]), atol=1e-5)
        assert emb.name == ref.name == str(src.resolve())
        assert sorted((str(p.relative_to(src)), p.stat().st_mtime_ns) for p in src.rglob("*")) == before
        (folder,) = cache.iterdir()
        assert folder.name.startswith("minilm-") and (folder / ob.FP32_FILE).is_file()
        # the hash is of the files, not of where they are: the same as the bundled copy's
        assert folder.name.split("-")[-1] == ob.model_hash(bundled_model_path())
    finally:
        for path in [src, *src.rglob("*")]:
            path.chmod(stat.S_IRWXU)


def test_bad_backend_is_refused(monkeypatch):
    with pytest.raises(InputError, match="backend") as err:
        Embedder(backend="tensorflow")
    assert err.value.argument == "backend"
    monkeypatch.setenv(ob.ENV_BACKEND, "nope")
    with pytest.raises(InputError, match=r"\$RAGNET_EMBED_BACKEND") as err:
        Embedder()
    assert err.value.argument == "backend"
    with pytest.raises(InputError) as err:
        Embedder(backend="onnx", device="cuda")
    assert err.value.argument == "device"


def test_backend_from_environment(monkeypatch):
    monkeypatch.delenv(ob.ENV_BACKEND, raising=False)
    assert Embedder().backend == "torch"
    monkeypatch.setenv(ob.ENV_BACKEND, "ONNX-int8")
    assert Embedder().backend == "onnx-int8"
    assert Embedder(backend="torch").backend == "torch"  # the argument wins


@pytest.mark.slow
def test_name_does_not_depend_on_backend(exports, tmp_path):
    names = {Embedder(backend=b, cache_dir=exports[0]).name for b in ob.BACKENDS}
    assert names == {DEFAULT_MODEL_NAME}
    # an index built with one backend is searched with another
    built = Index.build(make_docs(), tmp_path / "idx", embedder=Embedder(backend="onnx-int8", cache_dir=exports[0]),
                        show_progress=False)
    assert built.manifest["embedder"] == DEFAULT_MODEL_NAME
    loaded = Index.load(tmp_path / "idx", embedder=Embedder(backend="torch"))
    assert loaded.search("Which organelle produces energy for the cell?", k=1)[0].title == "Mitochondria"


@pytest.mark.slow
def test_sessions_follow_torch_threads(onnx_emb):
    import torch

    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        onnx_emb.encode(TEXTS[:2])
        assert onnx_emb._onnx.session().get_session_options().intra_op_num_threads == 1
    finally:
        torch.set_num_threads(old)
    assert onnx_emb._onnx.session().get_session_options().intra_op_num_threads == old


def test_missing_onnxruntime_names_the_pip_command(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError, match=r"pip install onnxruntime onnx"):
        Embedder(backend="onnx", cache_dir=tmp_path).load()
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_unsupported_pooling_is_refused(tmp_path):
    src = tmp_path / "maxpool"
    shutil.copytree(bundled_model_path(), src)
    cfg = src / "1_Pooling" / "config.json"
    pooling = json.loads(cfg.read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
    cfg.write_text(json.dumps(pooling))
    with pytest.raises(InputError, match="Pooling") as err:
        Embedder(src, backend="onnx", cache_dir=tmp_path / "cache").load()
    assert err.value.argument == "backend"
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]  # nothing half-written was kept


@pytest.mark.slow
def test_embed_bench_reports_speed_and_agreement(exports):
    result = run_embed_bench(TEXTS[:8], backends=("torch@4", "onnx", "onnx-int8", "onnx-int8@3"), repeats=1,
                             cache_dir=exports[0], queries=QUESTIONS[:2])
    assert result["texts"] == 8 and result["model"] == DEFAULT_MODEL_NAME
    assert list(result["backends"]) == ["torch", "torch@4", "onnx", "onnx-int8", "onnx-int8@3"]
    rows = result["backends"]
    torch_row, fp32, int8 = (rows[b] for b in ("torch", "onnx", "onnx-int8"))
    assert [row["batch_size"] for row in rows.values()] == [16, 4, 1, 1, 3]
    assert torch_row["ratio_to_torch"] == 1.0 and torch_row["min_cos"] == 1.0 and rows["torch@4"]["min_cos"] > 0.9999
    assert set(int8["ratio_to"]) == {"torch", "torch@4"} and int8["ratio_to"]["torch"] == int8["ratio_to_torch"]
    assert fp32["min_cos"] > 0.9999 and 0.98 < int8["min_cos"] <= int8["mean_cos"] <= 1.0
    assert rows["onnx-int8@3"]["min_cos"] > 0.98
    assert all(row["texts_per_s"] > 0 and row["query"]["median_ms"] > 0 for row in rows.values())


def test_embed_bench_refuses_a_bad_batch_pin():
    with pytest.raises(InputError, match="'torch@x'.*positive integer"):
        run_embed_bench(TEXTS[:2], backends=("torch@x",), repeats=1)
    with pytest.raises(InputError, match="unknown embedding backend"):
        run_embed_bench(TEXTS[:2], backends=("tensorflow@8",), repeats=1)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["onnx_emb", "int8_emb"])
def test_concurrent_batches_equal_one_batch_at_a_time(request, which):
    """forward_batches on 2 single-thread workers gives each batch's forward, in order,
    with more batches than its look-ahead holds."""
    enc = request.getfixturevalue(which)._onnx
    batches = [TEXTS[i : i + 3] for i in range(0, 30, 3)] + [[TEXTS[0]]]
    want = [enc.forward(b, enc.document_prompt, threads=1) for b in batches]
    got = list(enc.forward_batches(batches, enc.document_prompt, workers=2))
    assert len(got) == len(batches)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-5)
    assert ob._SESSIONS.get((str(enc.path), 1)) is not None  # the workers' shared single-thread session


@pytest.mark.slow
def test_onnx_batch_of_one_by_default_and_encode_matches_torch(exports, onnx_emb, torch_vecs):
    assert onnx_emb.batch_size == 1 and Embedder(backend="onnx", batch_size=8, cache_dir=exports[0]).batch_size == 8
    docs = onnx_emb.encode(TEXTS)  # one text per call, two calls at a time on this machine's threads
    np.testing.assert_allclose(docs, torch_vecs[0], atol=1e-4)
    # int8 vectors no longer depend on their batch mates at batch size 1: encode == encode_query's path
    int8 = Embedder(backend="onnx-int8", cache_dir=exports[0], query_cache=0)
    np.testing.assert_allclose(int8.encode_queries(QUESTIONS[:5]), np.stack([int8.encode_query(q) for q in QUESTIONS[:5]]),
                               atol=1e-5)


def test_outdated_or_corrupt_export_is_not_reused(tmp_path):
    for name in (ob.FP32_FILE, ob.TOKENIZER_FILE):
        (tmp_path / name).write_text("x")
    meta = tmp_path / ob.EXPORT_META
    meta.write_text(json.dumps({"format": ob.FORMAT_VERSION}))
    assert ob._complete(tmp_path)
    meta.write_text(json.dumps({"format": ob.FORMAT_VERSION - 1}))
    assert not ob._complete(tmp_path)
    meta.write_text("{not json")
    assert not ob._complete(tmp_path)
    (tmp_path / ob.FP32_FILE).unlink()
    meta.write_text(json.dumps({"format": ob.FORMAT_VERSION}))
    assert not ob._complete(tmp_path)


@pytest.mark.slow
def test_an_onnx_query_never_imports_torch(exports, tmp_path):
    """A cold `ask` with an ONNX embedder must not pay torch's ~2 s import: not for the query
    vector, not for the flat index's cosines (a served LM's hang bound counts that time)."""
    import subprocess

    Index.build(make_docs(), tmp_path / "idx", embedder=Embedder(backend="onnx-int8", cache_dir=exports[0]),
                show_progress=False)
    code = (
        "import sys\n"
        "from ragnet.index import Embedder, Index\n"
        f"emb = Embedder(backend='onnx-int8', cache_dir={str(exports[0])!r})\n"
        f"hits = Index.load({str(tmp_path / 'idx')!r}, embedder=emb).search('Which organelle produces energy?', k=1)\n"
        "print(hits[0].title, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Mitochondria", "False"]


def _home_with(cache: Path, tmp_path: Path) -> Path:
    """A RAGNET_HOME whose ``onnx`` folder is ``cache`` (where Index.load's embedder looks)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "onnx").symlink_to(cache, target_is_directory=True)
    return home


@pytest.mark.slow
def test_auto_settles_on_onnx_only_when_the_export_is_cached(exports, onnx_emb, tmp_path, monkeypatch):
    monkeypatch.delenv(ob.ENV_BACKEND, raising=False)
    assert Embedder(backend="auto", cache_dir=tmp_path / "empty").backend == "torch"
    assert Embedder(backend="auto", cache_dir=exports[0]).backend == "onnx"  # onnx_emb exported it
    assert Embedder(backend="auto", cache_dir=exports[0], device="cuda").backend == "torch"
    monkeypatch.setattr(ob, "onnx_installed", lambda: False)
    assert Embedder(backend="auto", cache_dir=exports[0]).backend == "torch"


@pytest.mark.slow
def test_a_loaded_index_queries_through_the_cached_export_with_the_same_results(
        exports, onnx_emb, embedder, tmp_path, monkeypatch):
    """Index.load's embedder is "auto": with the fp32 export cached it is ONNX, and a search
    returns what the torch embedder that built the index returns."""
    monkeypatch.delenv(ob.ENV_BACKEND, raising=False)
    built = Index.build(make_docs(), tmp_path / "idx", embedder=embedder, show_progress=False)
    monkeypatch.setenv("RAGNET_HOME", str(_home_with(exports[0], tmp_path)))
    loaded = Index.load(tmp_path / "idx")
    assert loaded.embedder.backend == "onnx"
    for query in QUERIES:
        want, got = built.search(query, k=5), loaded.search(query, k=5)
        assert [c.id for c in got] == [c.id for c in want]
        np.testing.assert_allclose([c.score for c in got], [c.score for c in want], atol=1e-5)
    monkeypatch.setenv(ob.ENV_BACKEND, "torch")  # an explicit choice wins over "auto"
    assert Index.load(tmp_path / "idx").embedder.backend == "torch"


@pytest.mark.slow
def test_auto_falls_back_to_torch_when_the_cached_export_does_not_load(exports, onnx_emb, embedder, tmp_path,
                                                                       caplog):
    broken = tmp_path / "cache"
    shutil.copytree(exports[0], broken, symlinks=True)
    for folder in broken.iterdir():
        (folder / ob.FP32_FILE).write_bytes(b"not an onnx graph")
    emb = Embedder(backend="auto", cache_dir=broken)
    assert emb.backend == "onnx"
    with caplog.at_level("WARNING", logger="ragnet.index.embedder"):
        vec = emb.encode_query(QUERIES[0])
    assert emb.backend == "torch"
    assert "did not load" in caplog.text and "embedding with torch" in caplog.text
    np.testing.assert_allclose(vec, embedder.encode_query(QUERIES[0]), atol=1e-5)
    with pytest.raises(Exception):  # an explicit "onnx" is not silently replaced
        Embedder(backend="onnx", cache_dir=broken).encode_query(QUERIES[1])


@pytest.mark.slow
def test_a_cold_search_of_a_torch_built_index_never_imports_torch(exports, onnx_emb, embedder, tmp_path):
    """What keeps a cold `ragnet ask` inside a hung server's time bound: the index was built with
    torch, the export is cached, and the query side loads ONNX Runtime only."""
    import subprocess

    Index.build(make_docs(), tmp_path / "idx", embedder=embedder, show_progress=False)
    env = {k: v for k, v in os.environ.items() if k != ob.ENV_BACKEND}
    env["RAGNET_HOME"] = str(_home_with(exports[0], tmp_path))
    code = (
        "import sys\n"
        "from ragnet.index import Index\n"
        f"index = Index.load({str(tmp_path / 'idx')!r})\n"
        "hits = index.search('Which organelle produces energy?', k=1)\n"
        "print(hits[0].title, index.embedder.backend, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["Mitochondria", "onnx", "False"]


@pytest.mark.slow
def test_cli_index_prepares_the_export_once(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from ragnet.cli import app

    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(ob.ENV_BACKEND, raising=False)
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps({"id": f"d{i}", "title": f"T{i}", "text": f"Text number {i}."})
                              for i in range(3)) + "\n")
    result = CliRunner().invoke(app, ["index", str(docs), "--out", str(tmp_path / "idx"), "--no-sentences"])
    assert result.exit_code == 0, result.output
    exported = list((tmp_path / "home" / "onnx").glob(f"*/{ob.FP32_FILE}"))
    assert len(exported) == 1
    stamp = exported[0].stat().st_mtime_ns
    built = Index.load(tmp_path / "idx")
    assert built.manifest["embedder_backend"] == "onnx"  # exported first, then embedded through it
    assert built.embedder.backend == "onnx"
    # the same vectors as a torch build of the same documents
    result = CliRunner().invoke(app, ["index", str(docs), "--out", str(tmp_path / "idx-torch"), "--no-sentences",
                                      "--embed-backend", "torch"])
    assert result.exit_code == 0, result.output
    torch_built = Index.load(tmp_path / "idx-torch")
    assert torch_built.manifest["embedder_backend"] == "torch"
    np.testing.assert_allclose(built._emb, torch_built._emb, atol=1e-4)
    result = CliRunner().invoke(app, ["index", str(docs), "--out", str(tmp_path / "idx2"), "--no-sentences"])
    assert result.exit_code == 0, result.output
    assert exported[0].stat().st_mtime_ns == stamp  # reused, not exported again


def test_a_build_given_no_backend_embeds_through_the_fp32_export(tmp_path, monkeypatch, embedder):
    """Index.build(embedder=None or a name) exports first and embeds through ONNX, unless the
    environment names a backend; an Embedder given is used as it is."""
    from ragnet.index.embedder import build_embedder

    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(ob.ENV_BACKEND, raising=False)
    docs = make_docs()[:4]
    built = Index.build(docs, tmp_path / "idx", show_progress=False, sentences=False)
    assert built.manifest["embedder_backend"] == "onnx"
    assert len(list((tmp_path / "home" / "onnx").glob(f"*/{ob.FP32_FILE}"))) == 1
    given = Index.build(docs, tmp_path / "idx-torch", embedder=embedder, show_progress=False, sentences=False)
    assert given.manifest["embedder_backend"] == "torch"
    np.testing.assert_allclose(built._emb, given._emb, atol=1e-4)
    monkeypatch.setenv(ob.ENV_BACKEND, "torch")
    assert build_embedder(None).backend == "torch" and build_embedder(DEFAULT_MODEL_NAME).backend == "torch"
