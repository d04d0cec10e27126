"""Tests for ragnet.core.rules (Chunk Filter) with hand-built metadata dicts."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ragnet.core.rules import MetadataCatalog, RuleDecision, RuleResult, apply
from ragnet.errors import InputError


def meta(**kw):
    base = {
        "years": [],
        "title_years": [],
        "dates": [],
        "entities": [],
        "title_entities": [],
        "places": [],
        "title_places": [],
    }
    base.update(kw)
    return base


# --------------------------------------------------------------------------- drop: years


def test_drop_on_year_mismatch_with_readable_reason():
    r = apply({"years": [2019]}, [("a#0", meta(title_years=[2018], years=[2018]))])
    assert r.kept == []
    assert r.dropped == [RuleDecision("a#0", "drop", "year mismatch: question 2019, chunk 2018")]


def test_keep_when_chunk_has_no_declared_years():
    # Years only mentioned in the body are not a contradiction.
    r = apply({"years": [2019]}, [("a#0", meta()), ("b#0", meta(years=[2018]))])
    assert r.kept == ["a#0", "b#0"] and r.dropped == []


def test_keep_when_years_overlap():
    r = apply({"years": [2019, 2020]}, [("a#0", meta(title_years=[2018, 2019]))])
    assert r.kept == ["a#0"] and r.dropped == []


def test_doc_declared_year_counts_as_title_year():
    cands = [
        ("a#0", meta(doc={"year": 2018})),
        ("b#0", meta(doc={"year": 2019})),
        ("c#0", meta(doc={"years": [2017]})),
    ]
    r = apply({"years": [2019]}, cands)
    assert r.kept == ["b#0"]
    assert [d.reason for d in r.dropped] == [
        "year mismatch: question 2019, chunk 2018",
        "year mismatch: question 2019, chunk 2017",
    ]


def test_multiple_years_are_all_named():
    r = apply({"years": [2020, 2019]}, [("a#0", meta(title_years=[2018, 2017]))])
    assert r.dropped[0].reason == "year mismatch: question 2019/2020, chunk 2017/2018"


def test_question_dates_contribute_years():
    r = apply({"dates": ["2019-03-04"]}, [("a#0", meta(title_years=[2018])), ("b#0", meta(title_years=[2019]))])
    assert r.kept == ["b#0"]


def test_no_question_years_drops_nothing():
    r = apply({"entities": ["acme"]}, [("a#0", meta(title_years=[2018]))])
    assert r.kept == ["a#0"]


def test_missing_and_partial_metadata_are_tolerated():
    r = apply({"years": [2019]}, [("a#0", {}), ("b#0", None), ("c#0", {"title_years": ["2018"]})])
    assert r.kept == ["a#0", "b#0"]
    assert r.dropped[0].chunk_id == "c#0"
    assert apply(None, [("a#0", {})]).kept == ["a#0"]


# --------------------------------------------------------------------------- drop: places


def test_drop_on_place_mismatch():
    r = apply({"places": ["texas"]}, [("a#0", meta(title_places=["ohio"], places=["ohio", "texas"]))])
    assert r.dropped == [RuleDecision("a#0", "drop", "place mismatch: question texas, chunk ohio")]


def test_places_fall_back_to_body_places_and_keep_on_overlap():
    cands = [
        ("a#0", meta(places=["ohio"])),  # no title places: body places decide
        ("b#0", meta(places=["texas", "ohio"])),
        ("c#0", meta(title_places=["Texas"])),  # case-insensitive
        ("d#0", meta()),  # no places at all
        ("e#0", meta(doc={"place": "Ohio"})),  # document-declared place
    ]
    r = apply({"places": ["texas"]}, cands)
    assert r.kept == ["b#0", "c#0", "d#0"]
    assert [d.chunk_id for d in r.dropped] == ["a#0", "e#0"]
    assert r.dropped[1].reason == "place mismatch: question texas, chunk ohio"


def test_drop_on_selects_fields_and_drop_switch_disables():
    cands = [("a#0", meta(title_years=[2018])), ("b#0", meta(title_places=["ohio"]))]
    q = {"years": [2019], "places": ["texas"]}
    assert apply(q, cands).kept == []
    assert apply(q, cands, drop_on=("years",)).kept == ["b#0"]
    assert apply(q, cands, drop_on="places").kept == ["a#0"]
    assert apply(q, cands, drop_on=()).kept == ["a#0", "b#0"]
    off = apply(q, cands, drop=False)
    assert off.kept == ["a#0", "b#0"] and off.dropped == []


# --------------------------------------------------------------------------- add


@pytest.fixture
def catalog():
    return MetadataCatalog.build(
        [
            ("wood#0", meta(title_entities=["ed wood"]), "Ed Wood (film)"),
            ("wood#1", meta(title_entities=["ed wood"]), "Ed Wood (film)"),
            ("wood#2", meta(title_entities=["ed wood"]), "Ed Wood (film)"),
            ("derr#0", meta(title_entities=["scott derrickson"]), "Scott Derrickson"),
            ("derr#1", meta(title_entities=["scott derrickson"]), "Scott Derrickson"),
            ("both#0", meta(title_entities=["ed wood", "scott derrickson"]), "Directors compared"),
            ("tx#0", meta(title_places=["texas"], title_years=[2019]), "Budget report"),
            ("tx#1", meta(title_places=["texas"], title_years=[2018]), "Budget report"),
            ("other#0", meta(title_entities=["acme"]), "Acme"),
        ]
    )


def test_catalog_maps(catalog):
    assert catalog.by_title["ed wood (film)"] == ["wood#0", "wood#1", "wood#2"]
    assert catalog.by_title["ed wood"] == ["wood#0", "wood#1", "wood#2"]  # parenthetical stripped
    assert catalog.by_entity["scott derrickson"] == ["derr#0", "derr#1", "both#0"]
    assert catalog.by_place["texas"] == ["tx#0", "tx#1"]
    assert catalog.by_year == {2019: ["tx#0"], 2018: ["tx#1"]}
    assert len(catalog) == 9 and "tx#0" in catalog and "nope" not in catalog


def test_add_on_title_and_entity_match(catalog):
    q = {"entities": ["scott derrickson", "ed wood"]}
    r = apply(q, [], catalog, max_add=10)
    ids = [d.chunk_id for d in r.added]
    # both#0 matches two question entities; then first chunks of each title, then second chunks.
    assert ids == ["both#0", "wood#0", "derr#0", "wood#1", "derr#1", "wood#2"]
    assert all(d.action == "add" for d in r.added)
    assert r.added[0].reason == "title mentions question entity 'scott derrickson', entity 'ed wood'"
    assert r.added[1].reason == "title 'Ed Wood (film)' matches question entity 'ed wood'"


def test_add_on_title_place_match_and_skips_contradicting(catalog):
    r = apply({"places": ["texas"], "years": [2019]}, [], catalog)
    assert [d.chunk_id for d in r.added] == ["tx#0"]  # tx#1 declares 2018: never added
    assert r.added[0].reason == "title mentions question place 'texas'"
    # Even with dropping switched off, contradicting chunks are not added.
    assert [d.chunk_id for d in apply({"places": ["texas"], "years": [2019]}, [], catalog, drop=False).added] == [
        "tx#0"
    ]


def test_never_adds_chunks_already_present(catalog):
    cands = [("wood#0", meta()), ("wood#1", meta(title_years=[2001]))]
    r = apply({"entities": ["ed wood"], "years": [1994]}, cands, catalog)
    assert [d.chunk_id for d in r.dropped] == ["wood#1"]  # dropped candidates are not re-added either
    assert [d.chunk_id for d in r.added] == ["wood#2", "both#0"]


def test_max_add_and_switches(catalog):
    q = {"entities": ["ed wood"]}
    assert len(apply(q, [], catalog, max_add=2).added) == 2
    assert apply(q, [], catalog, max_add=0).added == []
    assert apply(q, [], catalog, add=False).added == []
    assert apply(q, [], None).added == []
    assert apply({"entities": ["nobody"]}, [], catalog).added == []


def test_result_ids_and_json(catalog):
    cands = [("a", meta(title_years=[2019])), ("b", meta(title_years=[2018]))]
    r = apply({"years": [2019], "entities": ["acme"]}, cands, catalog)
    assert r.ids == ["a", "other#0"]
    assert json.loads(json.dumps(r.to_dict())) == {
        "kept": ["a"],
        "dropped": [{"chunk_id": "b", "action": "drop", "reason": "year mismatch: question 2019, chunk 2018"}],
        "added": [{"chunk_id": "other#0", "action": "add", "reason": "title 'Acme' matches question entity 'acme'"}],
    }
    assert RuleResult().ids == []


def test_catalog_accepts_chunk_like_objects_and_rejects_duplicates():
    cat = MetadataCatalog.build([SimpleNamespace(id="x#0", metadata={"title_entities": ["x"]}, title="X")])
    assert cat.by_title == {"x": ["x#0"]} and cat.titles["x#0"] == "X"
    with pytest.raises(InputError, match="duplicate chunk id 'x#0'"):
        MetadataCatalog.build([("x#0", {}, "X"), ("x#0", {}, "X")])
    with pytest.raises(InputError) as info:
        MetadataCatalog.build([("x#0", {})])
    assert info.value.argument == "items"


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"max_add": -1}, "max_add"),
        ({"max_add": 1.5}, "max_add"),
        ({"drop_on": ("years", "colours")}, "drop_on"),
        ({"candidates": [("a",)]}, "candidates"),
        ({"candidates": [(1, {})]}, "candidates"),
        ({"candidates": [("a", "not a dict")]}, "candidates"),
        ({"question_meta": ["2019"]}, "question_meta"),
    ],
)
def test_invalid_input_raises_input_error(kwargs, argument):
    args = {"question_meta": {"years": [2019]}, "candidates": [("a", {})]}
    for key in ("question_meta", "candidates"):
        if key in kwargs:
            args[key] = kwargs.pop(key)
    with pytest.raises(InputError) as info:
        apply(args["question_meta"], args["candidates"], **kwargs)
    assert info.value.argument == argument
