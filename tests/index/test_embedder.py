"""Embedder: bundled default, normalised float32 output, fast query path == encode."""

from __future__ import annotations

import numpy as np
import pytest

from ragnet.errors import InputError
from ragnet.index import Embedder
from ragnet.index.embedder import DEFAULT_MODEL_NAME, bundled_model_path, resolve_model

from .conftest import QUERIES


def test_default_name_and_dimension(embedder):
    assert embedder.name == DEFAULT_MODEL_NAME
    assert embedder.dimension == 384
    assert embedder.device == "cpu"


def test_bundled_path_maps_to_default_name():
    assert resolve_model(bundled_model_path())[0] == DEFAULT_MODEL_NAME
    assert resolve_model("all-MiniLM-L6-v2")[0] == DEFAULT_MODEL_NAME


def test_model_is_cached_per_name_and_device(embedder):
    assert Embedder().model is embedder.model


def test_encode_shape_dtype_and_norm(embedder):
    vecs = embedder.encode(["short", "a much longer text about several different things " * 5, "mid length text"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_encode_restores_input_order(embedder):
    texts = ["b" * 5, "a long sentence " * 10, "mid sized text here", "x"]
    together = embedder.encode(texts)
    one_by_one = np.stack([embedder.encode([t])[0] for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_encode_empty(embedder):
    assert embedder.encode([]).shape == (0, 384)


@pytest.mark.parametrize("query", QUERIES)
def test_fast_query_path_matches_sentence_transformers(embedder, query):
    expected = embedder.model.encode(query, convert_to_numpy=True, normalize_embeddings=True)
    np.testing.assert_allclose(embedder.encode_query(query), expected, atol=1e-6)


def test_encode_queries_matches_single(embedder):
    batch = embedder.encode_queries(QUERIES)
    single = np.stack([embedder.encode_query(q) for q in QUERIES])
    np.testing.assert_allclose(batch, single, atol=1e-5)


def test_bad_arguments():
    with pytest.raises(InputError, match="batch_size"):
        Embedder(batch_size=0)
    with pytest.raises(InputError, match="empty"):
        Embedder("  ")


def test_fast_bert_path_is_active_and_agrees_with_eager(embedder):
    from ragnet.index.embedder import _BertQueryEncoder

    embedder.encode_query("warm up")
    assert isinstance(embedder._bert(), _BertQueryEncoder)
    eager = Embedder(fast_bert=False, query_cache=0)
    for query in QUERIES + ["x", "word " * 400]:
        np.testing.assert_allclose(embedder.encode_query(query), eager.encode_query(query), atol=1e-6)
        expected = embedder.model.encode(query, convert_to_numpy=True, normalize_embeddings=True)
        np.testing.assert_allclose(embedder.encode_query(query), expected, atol=1e-6)


def test_non_bert_models_get_no_fast_bert():
    from ragnet.index.embedder import _BertQueryEncoder

    class Config:
        model_type = "mpnet"

    class Fake:
        config = Config()

    assert _BertQueryEncoder.from_transformer(Fake()) is None


def test_query_cache_returns_independent_copies(embedder):
    first = embedder.encode_query("cached query")
    first[:] = 0.0
    again = embedder.encode_query("cached query")
    assert np.linalg.norm(again) == pytest.approx(1.0, abs=1e-5)
    small = Embedder(query_cache=2)
    for q in ("a", "b", "c"):
        small.encode_query(q)
    assert list(small._cache) == ["b", "c"]


def test_default_batch_size_follows_the_backend():
    assert Embedder().batch_size == 16 and Embedder(batch_size=5).batch_size == 5
    emb = Embedder(backend="auto", cache_dir="/nonexistent-ragnet-cache")  # no export cached: settles on torch
    assert emb.backend == "torch" and emb.batch_size == 16


def test_encode_queries_in_several_batches():
    small = Embedder(batch_size=2)
    queries = QUERIES + ["one more", "and a last, longer query about rivers"]
    np.testing.assert_allclose(
        small.encode_queries(queries), np.stack([small.encode_query(q) for q in queries]), atol=1e-5
    )
