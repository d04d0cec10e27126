"""Tests for ragnet.index.catalog_store: the persisted catalog answers exactly like MetadataCatalog."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.required import SHARED_DATA, skip_or_fail

from ragnet.core import rules
from ragnet.core.rules import MetadataCatalog
from ragnet.corpus.chunking import chunk_documents
from ragnet.corpus.metadata import Gazetteer, extract_query_metadata
from ragnet.corpus.types import Document
from ragnet.errors import IndexFormatError, InputError
from ragnet.index.catalog_store import FILES, CatalogStore, CatalogWriter

HOTPOT = SHARED_DATA / "hotpotqa_dev_distractor" / "questions.jsonl"
REBUILD = "; rebuild with `ragnet index`"
PLACES = [
    "United States", "America", "England", "London", "France", "Paris", "California", "Los Angeles",
    "New York", "New York City", "Chicago", "Germany", "Japan", "Canada", "Australia", "India", "Texas",
    "Florida", "Scotland", "Ireland", "Italy", "Spain", "Mexico", "Brazil", "China", "Russia", "Zürich",
]
GAZ = Gazetteer(PLACES)


# ------------------------------------------------------------------------------ helpers


def write_store(folder: Path, items, **open_kw) -> CatalogStore:
    """Write ``(chunk_id, metadata, title)`` items with CatalogWriter and open them."""
    writer = CatalogWriter(folder)
    for row, (cid, meta, title) in enumerate(items):
        writer.add(row, cid, meta, title)
    writer.close()
    return open_store(folder, items, **open_kw)


def open_store(folder: Path, items, chunk_count: int | None = None) -> CatalogStore:
    ids = [cid for cid, _, _ in items]
    rows = {cid: r for r, cid in enumerate(ids)}
    metas = [meta for _, meta, _ in items]
    n = len(ids) if chunk_count is None else chunk_count
    return CatalogStore.open(folder, n, ids.__getitem__, rows.get, metas.__getitem__)


def assert_same(store: CatalogStore, cat: MetadataCatalog, queries) -> int:
    """matches() equal on every query; returns how many matches there were in all."""
    total = 0
    for q in queries:
        expected = cat.matches(q)
        assert store.matches(q) == expected, q
        total += len(expected)
    return total


# ------------------------------------------------------------------------------ real corpus


def _hotpot_records(limit: int) -> list[dict]:
    if not HOTPOT.is_file():
        skip_or_fail(f"{HOTPOT} is not available (set RAGNET_DATA)")
    out = []
    with HOTPOT.open(encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if len(out) == limit:
                break
    return out


@pytest.fixture(scope="module")
def hotpot():
    """~500 HotpotQA context paragraphs chunked small (several chunks a paragraph), some with
    document-declared years and places, plus the metadata of 100 questions."""
    records = _hotpot_records(100)
    docs: list[Document] = []
    for rec in records:
        for k, ctx in enumerate(rec["context"]):
            if len(docs) == 500:
                break
            n = len(docs)
            doc_meta: dict = {}
            if n % 7 == 0:
                doc_meta["year"] = 1990 + n % 25
            if n % 11 == 0:
                doc_meta["city"] = PLACES[n % len(PLACES)]
            docs.append(Document(id=f"{rec['id']}-{k}", title=ctx["title"], text=ctx["text"], metadata=doc_meta))
    chunks = chunk_documents(docs, chunk_tokens=40, overlap=8, gazetteer=GAZ)
    items = [(c.id, c.metadata, c.title) for c in chunks]
    questions = [extract_query_metadata(rec["question"], GAZ) for rec in records]
    return items, chunks, questions


@pytest.fixture(scope="module")
def hotpot_pair(hotpot, tmp_path_factory):
    items, _, _ = hotpot
    cat = MetadataCatalog.build(items)
    store = write_store(tmp_path_factory.mktemp("hotpot") / "catalog", items)
    return cat, store


def test_corpus_is_realistic(hotpot):
    items, chunks, questions = hotpot
    titles = [t for _, _, t in items]
    assert 500 <= len({c.doc_id for c in chunks}) and len(items) > 1000  # several chunks per paragraph
    assert any("(" in t for t in titles)  # parenthetical titles such as "Ed Wood (film)"
    assert sum(1 for q in questions if q["entities"]) > 80


def test_matches_equal_on_hotpot_questions(hotpot, hotpot_pair):
    _, _, questions = hotpot
    cat, store = hotpot_pair
    total = assert_same(store, cat, questions)
    assert total > 200  # the questions really hit the catalog


def test_matches_equal_on_queries_from_titles_and_title_metadata(hotpot, hotpot_pair):
    items, _, _ = hotpot
    cat, store = hotpot_pair
    queries = []
    for i, (_, meta, title) in enumerate(items[::9]):
        queries.append({"entities": [title]})
        queries.append({"entities": [title.split(" (")[0].upper()], "places": meta.get("title_places", [])})
        queries.append({"entities": meta.get("title_entities", [])[:3] + [items[(i * 37) % len(items)][2]]})
    queries.append({"places": ["london", "france", "los angeles"], "entities": ["america"]})
    results = [cat.matches(q) for q in queries]
    # the ranking is exercised: multi-term scores, and titles whose first chunks outrank later ones
    assert any(score >= 2 for r in results for _, score, _ in r)
    assert any(len({cid.split("#")[0] for cid, _, _ in r}) > 1 and any(cid.endswith("#1") for cid, _, _ in r)
               for r in results)
    assert assert_same(store, cat, queries) > 1000


def test_rules_apply_gives_the_same_result(hotpot, hotpot_pair):
    items, _, questions = hotpot
    cat, store = hotpot_pair
    changed = 0
    for i, q in enumerate(questions):
        q = dict(q, years=[1990 + i % 25]) if i % 3 == 0 else q
        cands = [(cid, meta) for cid, meta, _ in items[i * 10 : i * 10 + 8]]
        for max_add in (3, 10, 50):
            expected = rules.apply(q, cands, cat, max_add=max_add)
            assert rules.apply(q, cands, store, max_add=max_add) == expected
            changed += bool(expected.added or expected.dropped)
    assert changed > 50


def test_views_equal_the_catalog_dicts(hotpot, hotpot_pair):
    items, _, _ = hotpot
    cat, store = hotpot_pair
    assert dict(store.by_title) == cat.by_title
    assert dict(store.by_entity) == cat.by_entity
    assert dict(store.by_place) == cat.by_place and cat.by_place
    assert dict(store.by_year) == cat.by_year and cat.by_year
    assert len(store) == len(cat) == len(items)
    cid, meta, title = items[123]
    assert cid in store and store.metadata[cid] is meta and store.titles[cid] == title
    assert "nope#0" not in store and 5 not in store
    with pytest.raises(KeyError):
        store.metadata["nope#0"]


# ------------------------------------------------------------------------------ hand-made cases


HAND = [
    ("ew#0", {"title_entities": ["ed wood"]}, "Ed Wood"),
    ("ew#1", {"title_entities": ["ed wood"]}, "Ed Wood"),
    ("ew#2", {"title_entities": ["ed wood"]}, "Ed Wood"),
    ("ewf#0", {"title_entities": ["ed wood"], "title_years": [1994]}, "Ed Wood (film)"),
    ("ewf#1", {"title_entities": ["ed wood"], "title_years": [1994]}, "Ed Wood (film)"),
    ("ew2#0", {"title_entities": ["ed wood"]}, "ed   WOOD"),  # same normalised title, other raw title
    ("tb#0", {"title_entities": ["tim burton", "ed wood"], "entities": ["ed wood"]}, "Tim Burton and Ed Wood"),
    ("z#0", {"title_places": ["zürich"], "doc": {"year": 2019, "country": "Switzerland"}}, "Zürich"),
    ("z#1", {"title_places": ["Zürich"], "title_years": ["2018", True], "doc": {"years": [2019]}}, "Zürich"),
    ("sp#0", {"title_places": ["são paulo"], "doc": {"place": ["Brazil", "São Paulo"]}}, "São Paulo (city)"),
    ("tk#0", {"title_entities": ["東京"], "doc": {"region": "Kantō"}}, "東京"),
    ("st#0", {"title_entities": "Straße"}, "STRASSE"),  # casefold: "straße" -> "strasse"
    ("big#0", {"title_years": [10**20, -44]}, "Rome"),  # years beyond int64, and BC
    ("nul#0", {}, "Null\x00"),
    ("sur#0", {"title_entities": ["\ud800x"]}, "lone \ud800 surrogate"),
    ("empty#0", None, ""),
    ("empty#1", {"doc": "not a dict"}, "   "),
    ("ew#3", {"title_entities": ["ed wood"], "title_places": ["los angeles"]}, "Ed Wood"),
]

HAND_QUERIES = [
    {"entities": ["ed wood"]},
    {"entities": ["ED   Wood"], "places": ["los angeles"]},
    {"entities": "ed wood (film)"},
    {"entities": ["ed wood", "tim burton"]},
    {"places": ["ed wood"]},  # a place term matching titles and entities
    {"entities": ["ed wood"], "places": ["ed wood"]},  # the same term twice: counted once, as entity
    {"places": ["Zürich", "brazil", "são paulo"]},
    {"places": ["switzerland", "kantō"], "entities": ["東京"]},
    {"entities": ["straße", "strasse"]},
    {"entities": ["rome", "null\x00", "\ud800x", "lone \ud800 surrogate"]},
    {"entities": [""], "places": ["   "]},
    {"entities": None, "places": None},
    {"years": [2019], "dates": ["2019-01-01"]},
    {},
]


@pytest.fixture
def hand(tmp_path):
    return MetadataCatalog.build(HAND), write_store(tmp_path / "catalog", HAND)


def test_hand_made_matches_equal(hand):
    cat, store = hand
    assert assert_same(store, cat, HAND_QUERIES) > 20


def test_rank_in_title_puts_first_chunks_of_each_title_first(hand):
    _, store = hand
    ids = [cid for cid, _, _ in store.matches({"entities": ["ed wood"]})]
    # whole-title matches first (Ed Wood, Ed Wood (film), ed WOOD share the key), first chunks of
    # each normalised title before second ones, then build order; ew2#0 ranks with "ed wood" titles
    assert ids == ["ew#0", "ewf#0", "ew#1", "ewf#1", "ew#2", "ew2#0", "ew#3", "tb#0"]
    reasons = dict((cid, reason) for cid, _, reason in store.matches({"entities": ["ed wood"]}))
    assert reasons["ew2#0"] == "title 'ed   WOOD' matches question entity 'ed wood'"
    assert reasons["tb#0"] == "title mentions question entity 'ed wood'"


def test_hand_made_views_and_years(hand):
    cat, store = hand
    assert dict(store.by_year) == cat.by_year
    assert store.by_year[10**20] == ["big#0"] and store.by_year[-44] == ["big#0"]
    assert store.by_year[2019] == ["z#0", "z#1"] and True not in store.by_year
    assert dict(store.by_title) == cat.by_title and store.by_title["ed wood"] == cat.by_title["ed wood"]
    assert dict(store.by_place) == cat.by_place and "brazil" in store.by_place
    assert dict(store.by_entity) == cat.by_entity
    assert store.titles["nul#0"] == "Null\x00" and store.titles["sur#0"] == "lone \ud800 surrogate"
    assert store.metadata["empty#0"] is None  # what metadata_of_row returns, untouched


def test_hand_made_rules_apply_equal(hand):
    cat, store = hand
    cands = [("c#0", {"title_years": [2018]}), ("ew#1", {"title_entities": ["ed wood"]})]
    for q in [*HAND_QUERIES, {"entities": ["ed wood"], "years": [1994]}, {"places": ["zürich"], "years": [2018]}]:
        for kw in ({}, {"max_add": 2}, {"drop_on": ["places"]}, {"add": False}):
            assert rules.apply(q, cands, store, **kw) == rules.apply(q, cands, cat, **kw)
    r = rules.apply({"entities": ["ed wood"], "years": [1994]}, cands, store)
    assert [d.chunk_id for d in r.added][:2] == ["ew#0", "ewf#0"]


def test_empty_catalog(tmp_path):
    store = write_store(tmp_path / "catalog", [])
    assert len(store) == 0 and store.matches({"entities": ["x"], "places": ["y"]}) == []
    assert dict(store.by_title) == {} and dict(store.by_year) == {} and "a#0" not in store
    r = rules.apply({"years": [2019]}, [("a#0", {"title_years": [2018]})], store)
    assert r == rules.apply({"years": [2019]}, [("a#0", {"title_years": [2018]})], MetadataCatalog.build([]))


def test_files_are_plain_npy(tmp_path):
    folder = tmp_path / "catalog"
    write_store(folder, HAND)
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    for name in FILES:
        assert np.load(folder / name, allow_pickle=False).dtype != object
    assert CatalogStore.has_files(folder) and not CatalogStore.has_files(tmp_path)


# ------------------------------------------------------------------------------ writer misuse


def test_writer_rejects_rows_out_of_order_and_use_after_close(tmp_path):
    writer = CatalogWriter(tmp_path / "c")
    writer.add(0, "a#0", {}, "A")
    with pytest.raises(ValueError, match="expected row 1, got 2"):
        writer.add(2, "b#0", {}, "B")
    with pytest.raises(ValueError, match="expected row 1"):
        writer.add(True, "b#0", {}, "B")
    with pytest.raises(InputError, match="metadata must be a dict"):
        writer.add(1, "b#0", ["not", "a", "dict"], "B")
    writer.add(1, "b#0", {}, "B")
    writer.close()
    writer.close()  # idempotent
    assert writer.count == 2
    with pytest.raises(ValueError, match="closed"):
        writer.add(2, "c#0", {}, "C")


# ------------------------------------------------------------------------------ bad files


@pytest.fixture
def written(tmp_path):
    folder = tmp_path / "catalog"
    write_store(folder, HAND)
    return folder


def _error(folder, items=HAND, **kw) -> str:
    with pytest.raises(IndexFormatError) as info:
        store = open_store(folder, items, **kw)
        store.matches({"entities": ["ed wood", "zürich"], "places": ["zürich"]})
    message = str(info.value)
    assert message.endswith(REBUILD)
    return message


@pytest.mark.parametrize("name", ["info.npy", "entity.rows.npy", "title.keys.npy", "title_group.npy"])
def test_missing_file_is_named(written, name):
    (written / name).unlink()
    assert f"{name} is missing" in _error(written)


def test_missing_folder(tmp_path):
    assert "the folder is missing" in _error(tmp_path / "nowhere")


def test_chunk_count_mismatch(written):
    message = _error(written, chunk_count=len(HAND) + 1)
    assert "info.npy" in message and f"covers {len(HAND)} chunks" in message


def test_unknown_format_version(written):
    np.save(written / "info.npy", np.array([99, len(HAND)], dtype=np.int64))
    assert "info.npy says format version 99" in _error(written)


def test_garbage_and_pickled_files_are_refused(written):
    (written / "title.rows.npy").write_bytes(b"not an npy file")
    assert "title.rows.npy is unreadable" in _error(written)
    np.save(written / "title.rows.npy", np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    assert "title.rows.npy is unreadable" in _error(written)


def test_wrong_dtype(written):
    np.save(written / "place.offsets.npy", np.zeros(3, dtype=np.float64))
    assert "place.offsets.npy has shape (3,) float64" in _error(written)


def test_foreign_byte_order(written):
    offsets = np.load(written / "year.offsets.npy")
    np.save(written / "year.offsets.npy", offsets.astype(">i8"))  # right values, foreign byte order
    assert "year.offsets.npy has shape" in _error(written)


def test_inconsistent_offsets(written):
    keys = np.load(written / "title.keys.npy")
    np.save(written / "title.keys.npy", keys[:-3])  # truncated key bytes
    assert "title.key_offsets.npy spans" in _error(written)
    np.save(written / "title.keys.npy", keys)
    offsets = np.load(written / "entity.offsets.npy")
    np.save(written / "entity.offsets.npy", offsets[:-1])
    assert "entity.offsets.npy has" in _error(written)


def test_rows_out_of_range_found_when_read(written):
    rows = np.load(written / "entity.rows.npy")
    np.save(written / "entity.rows.npy", rows + len(HAND))
    assert "entity.rows.npy rows" in _error(written)


def test_title_of_row_out_of_range_found_when_read(written):
    np.save(written / "title_of_row.npy", np.full(len(HAND), 10_000, dtype=np.int64))
    assert "title_of_row.npy holds a title outside" in _error(written)
