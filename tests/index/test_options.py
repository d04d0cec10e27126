"""Index.build's option groups: checked when made, keyword-only in Index.build, and honoured."""

from __future__ import annotations

import inspect

import pytest

from ragnet.corpus.types import Document
from ragnet.errors import InputError
from ragnet.index import BuildEngine, DenseOptions, Index, IVFPQParams


def test_defaults_match_the_documented_auto_thresholds():
    assert DenseOptions() == DenseOptions(kind="auto", hnsw_from=50_000, ivfpq_from=200_000, ivfpq=None)
    assert BuildEngine() == BuildEngine(kind="local", address=None, workers=None)


@pytest.mark.parametrize("kwargs, argument", [
    ({"kind": "lsh"}, "dense.kind"),
    ({"hnsw_from": 0}, "dense.hnsw_from"),
    ({"ivfpq_from": 2.5}, "dense.ivfpq_from"),
    ({"hnsw_from": True}, "dense.hnsw_from"),
    ({"ivfpq": {"nprobe": 4}}, "dense.ivfpq"),
])
def test_bad_dense_options_name_the_field(kwargs, argument):
    with pytest.raises(InputError) as err:
        DenseOptions(**kwargs)
    assert err.value.argument == argument


@pytest.mark.parametrize("kwargs, argument", [
    ({"kind": "spark"}, "engine.kind"),
    ({"kind": "ray", "workers": 0}, "engine.workers"),
    ({"kind": "local", "workers": 2}, "engine.kind"),
    ({"kind": "local", "address": "auto"}, "engine.kind"),
])
def test_bad_engines_name_the_field(kwargs, argument):
    with pytest.raises(InputError) as err:
        BuildEngine(**kwargs)
    assert err.value.argument == argument


def test_options_are_frozen():
    with pytest.raises(AttributeError):
        DenseOptions().kind = "flat"  # type: ignore[misc]


def test_build_keeps_the_design_positional_form_and_the_rest_keyword_only():
    params = inspect.signature(Index.build).parameters
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    keyword_only = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
    assert positional == ["docs", "path", "chunk_tokens", "overlap", "embedder"]
    assert keyword_only == ["dense", "engine", "sentences", "gazetteer", "show_progress"]
    shard_params = inspect.signature(Index.build_from_shards).parameters
    assert [n for n, p in shard_params.items() if p.kind is p.KEYWORD_ONLY] == [
        "dense", "chunk_tokens", "overlap", "show_progress"]


@pytest.mark.parametrize("argument, value", [("dense", "flat"), ("engine", "ray")])
def test_build_refuses_a_bare_string_for_an_option_group(tmp_path, argument, value):
    with pytest.raises(InputError) as err:
        Index.build([Document(id="a", title="a", text="x")], tmp_path / "i", **{argument: value})
    assert err.value.argument == argument
    assert not (tmp_path / "i").exists()


def test_ivfpq_params_travel_in_the_dense_options():
    options = DenseOptions(kind="ivfpq", ivfpq=IVFPQParams(nlist=8, nprobe=2))
    assert options.ivfpq.resolve(10_000, 384).nprobe == 2
