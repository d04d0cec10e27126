"""The memory-mapped chunk store: round trips, id lookups, refused old folders, corruption, threads."""

from __future__ import annotations

import json
import random
import threading

import numpy as np
import pytest

from ragnet.corpus.types import Chunk
from ragnet.errors import IndexFormatError, InputError
from ragnet.index.chunk_store import (
    CHUNKS,
    ID_ROWS,
    IDS,
    OFFSETS,
    SIDECARS,
    ChunkStore,
    ChunkStoreWriter,
    write_chunk_store,
)

IDS_ODD = ["Zürich#0", "a b#1", "東京#2", 'quote"back\\slash#0', "", "x" * 300 + "#9"]


def make_chunks(n: int = 12) -> list[Chunk]:
    chunks = [
        Chunk(
            id=f"doc{i % 4}#{i}",
            doc_id=f"doc{i % 4}",
            title=f"Title {i} – ünïcode",
            text=f"Text of chunk {i}.\nSecond line with a tab\t and \u2028 separator.",
            tokens=7 + i,
            position=i,
            metadata={"years": [1900 + i], "doc": {"place": "Zürich", "nested": {"n": i, "ok": i % 2 == 0}}},
        )
        for i in range(n)
    ]
    chunks += [
        Chunk(id=cid, doc_id="odd", title="Odd", text=f"odd {j}", tokens=2, position=j) for j, cid in enumerate(IDS_ODD)
    ]
    return chunks


def stored(chunk: Chunk) -> Chunk:
    """What the store gives back: the chunk without retrieval scores."""
    return chunk.with_scores(score=0.0, dense_score=None, bm25_score=None)


@pytest.fixture
def chunks() -> list[Chunk]:
    return make_chunks()


@pytest.fixture
def folder(tmp_path, chunks):
    write_chunk_store(tmp_path, chunks)
    return tmp_path


@pytest.fixture
def store(folder):
    with ChunkStore.open(folder) as s:
        yield s


def jsonl_only_copy(src, dst):
    """A folder from before the sidecars: only chunks.jsonl."""
    dst.mkdir()
    (dst / CHUNKS).write_bytes((src / CHUNKS).read_bytes())
    return dst


# -- round trip ------------------------------------------------------------------------


def test_rows_round_trip_every_field(store, chunks):
    assert len(store) == len(chunks)
    for i, chunk in enumerate(chunks):
        got = store[i]
        assert got == stored(chunk)
        assert (got.id, got.doc_id, got.title, got.text, got.tokens, got.position) == (
            chunk.id, chunk.doc_id, chunk.title, chunk.text, chunk.tokens, chunk.position
        )
        assert got.metadata == chunk.metadata
    assert store[3].metadata["doc"]["nested"] == {"n": 3, "ok": False}
    scored = chunks[0].with_scores(score=0.7, dense_score=0.5, bm25_score=3.0)
    folder2 = store.folder.parent / "scored"
    write_chunk_store(folder2, [scored])
    with ChunkStore.open(folder2) as s:
        assert s[0] == stored(chunks[0]) and s[0].score == 0.0 and s[0].bm25_score is None


def test_jsonl_holds_one_readable_record_per_chunk(folder, chunks):
    lines = (folder / CHUNKS).read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == len(chunks) + 1
    record = json.loads(lines[0])
    assert set(record) == {"id", "doc_id", "title", "text", "tokens", "position", "metadata"}
    assert "Zürich" in lines[0]  # ensure_ascii=False: readable


def test_negative_indices_slices_and_iteration(store, chunks):
    want = [stored(c) for c in chunks]
    assert store[-1] == want[-1] and store[-len(want)] == want[0]
    assert store[2:7] == want[2:7]
    assert store[::3] == want[::3]
    assert store[::-2] == want[::-2]
    assert store[5:2] == [] and store[100:] == []
    assert list(store) == want
    assert list(reversed(store)) == want[::-1]
    assert store.take(np.array([3, 0, 3])) == [want[3], want[0], want[3]]
    with pytest.raises(IndexError):
        store[len(want)]
    with pytest.raises(IndexError):
        store[-len(want) - 1]
    with pytest.raises(TypeError):
        store["doc0#0"]


def test_iteration_spans_several_blocks(tmp_path, monkeypatch):
    import ragnet.index.chunk_store as cs

    monkeypatch.setattr(cs, "_BLOCK", 300)  # a few rows a block, one row larger than a block
    chunks = [Chunk(id=f"d#{i}", doc_id="d", title="T", text="w " * (i * 40), tokens=i) for i in range(20)]
    write_chunk_store(tmp_path, chunks)
    with ChunkStore.open(tmp_path) as s:
        assert list(s) == chunks
        assert s[4:17] == chunks[4:17]


def test_empty_store(tmp_path):
    assert write_chunk_store(tmp_path, []) == 0
    with ChunkStore.open(tmp_path, count=0) as s:
        assert len(s) == 0 and list(s) == [] and s[:] == []
        assert s.row("a#0") is None and "a#0" not in s
        assert s.rows([]).shape == (0,)
        with pytest.raises(KeyError, match="a#0"):
            s.rows(["a#0"])


# -- ids -------------------------------------------------------------------------------


def test_id_lookups_hit_and_miss_with_unicode(store, chunks):
    for i, chunk in enumerate(chunks):
        assert store.row(chunk.id) == i
        assert chunk.id in store
        assert store.id_at(i) == chunk.id
        assert store.chunk(chunk.id) == stored(chunk)
    assert store.id_at(-1) == chunks[-1].id
    for missing in ["Zurich#0", "Zürich#1", "a b", "zürich#0", "x" * 301 + "#9", "x" * 1000, "Zürich#0\x00", "\ud800"]:
        assert store.row(missing) is None
        assert missing not in store
    assert 3 not in store and chunks[0] not in store  # membership is by id
    with pytest.raises(KeyError, match="nope#0"):
        store.chunk("nope#0")


def test_rows_vectorised_and_key_error_names_the_id(store, chunks):
    order = [7, 0, len(chunks) - 1, 7, len(chunks) - 3]
    got = store.rows(chunks[i].id for i in order)
    assert got.dtype == np.int64 and got.tolist() == order
    assert store.rows([]).tolist() == []
    with pytest.raises(KeyError, match="Zürich#7") as err:
        store.rows([chunks[0].id, "Zürich#7", "also-missing"])
    assert "ids look like" in str(err.value)
    with pytest.raises(KeyError, match="'xx'"):
        store.rows(["x" * 300 + "#9", "xx"])
    with pytest.raises(TypeError):
        store.rows("doc0#0")


def test_sidecar_arrays(folder, chunks):
    ids = np.load(folder / IDS, allow_pickle=False)
    id_rows = np.load(folder / ID_ROWS, allow_pickle=False)
    offsets = np.load(folder / OFFSETS, allow_pickle=False)
    assert ids.dtype.kind == "S" and list(ids) == sorted(c.id.encode() for c in chunks)
    assert [chunks[r].id for r in id_rows] == [i.decode() for i in ids]
    assert offsets.dtype == np.int64 and offsets[0] == 0 and offsets[-1] == (folder / CHUNKS).stat().st_size
    assert len(offsets) == len(chunks) + 1


def test_duplicate_id_refused_and_nothing_left_behind(tmp_path, chunks):
    with pytest.raises(InputError, match="duplicate chunk id 'Zürich#0'"):
        write_chunk_store(tmp_path, chunks + [Chunk(id="Zürich#0", doc_id="z", title="", text="t", tokens=1)])
    assert not (tmp_path / CHUNKS).exists() and not any((tmp_path / name).exists() for name in SIDECARS)


def test_writer_refuses_unstorable_chunks_and_aborts(tmp_path):
    bad = Chunk(id="a#0", doc_id="a", title="", text="t", tokens=1, metadata={"s": {1, 2}})
    with pytest.raises(InputError, match="a#0"):
        with ChunkStoreWriter(tmp_path) as w:
            w.add(Chunk(id="ok#0", doc_id="ok", title="", text="t", tokens=1))
            w.add(bad)
    assert not (tmp_path / CHUNKS).exists()
    with pytest.raises(InputError, match="NUL"):
        write_chunk_store(tmp_path, [Chunk(id="a\x00", doc_id="a", title="", text="t", tokens=1)])
    w = ChunkStoreWriter(tmp_path)
    w.add(Chunk(id="ok#0", doc_id="ok", title="", text="t", tokens=1))
    assert w.close() == 1 and w.close() == 1
    with pytest.raises(ValueError, match="closed"):
        w.add(Chunk(id="ok#1", doc_id="ok", title="", text="t", tokens=1))


def test_rewriting_a_folder_drops_stale_sidecars(folder):
    write_chunk_store(folder, [Chunk(id="only#0", doc_id="only", title="", text="t", tokens=1)])
    with ChunkStore.open(folder, count=1) as s:
        assert s[0].id == "only#0" and s.row("doc0#0") is None


# -- folders without the sidecars -------------------------------------------------------


def test_a_folder_with_only_the_jsonl_is_refused(folder, tmp_path):
    old = jsonl_only_copy(folder, tmp_path / "v1")
    with pytest.raises(IndexFormatError, match=r"incomplete: chunks\.offsets\.npy, chunks\.ids\.npy, "
                                               r"chunks\.id_rows\.npy is missing; rebuild with `ragnet index`$"):
        ChunkStore.open(old)
    assert sorted(p.name for p in old.iterdir()) == [CHUNKS]  # opening writes nothing


# -- corruption ------------------------------------------------------------------------


def test_wrong_count(folder, chunks):
    with pytest.raises(IndexFormatError, match=rf"chunks\.jsonl has {len(chunks)} chunks, expected 3; rebuild"):
        ChunkStore.open(folder, count=3)
    ChunkStore.open(folder, count=len(chunks)).close()


def test_truncated_jsonl(folder):
    data = (folder / CHUNKS).read_bytes()
    (folder / CHUNKS).write_bytes(data[:-10])
    with pytest.raises(IndexFormatError, match=r"chunks\.offsets\.npy says chunks\.jsonl ends .*rebuild with `ragnet index`$"):
        ChunkStore.open(folder)


def test_truncated_after_open_fails_on_read(folder, chunks):
    with ChunkStore.open(folder) as s:
        with open(folder / CHUNKS, "r+b") as fh:
            fh.truncate(10)
        with pytest.raises(IndexFormatError, match=r"chunks\.jsonl ended at byte"):
            s[len(chunks) - 1]


@pytest.mark.parametrize(
    "name, array, message",
    [
        (OFFSETS, lambda o, i, r: o[::-1].copy(), r"chunks\.offsets\.npy starts at byte"),
        (OFFSETS, lambda o, i, r: np.concatenate([o[:3], o[2:]]), r"chunks\.offsets\.npy is not strictly increasing"),
        (OFFSETS, lambda o, i, r: o.astype(np.float64), r"chunks\.offsets\.npy has shape"),
        (IDS, lambda o, i, r: i[:-1], r"chunks\.ids\.npy has shape"),
        (IDS, lambda o, i, r: i[::-1].copy(), r"chunks\.ids\.npy is not sorted"),
        (ID_ROWS, lambda o, i, r: r[:-1], r"chunks\.id_rows\.npy has shape"),
        (ID_ROWS, lambda o, i, r: r + 1, r"chunks\.id_rows\.npy holds a row outside"),
    ],
)
def test_inconsistent_sidecars(folder, name, array, message):
    arrays = [np.load(folder / n, allow_pickle=False) for n in (OFFSETS, IDS, ID_ROWS)]
    np.save(folder / name, array(*arrays), allow_pickle=False)
    with pytest.raises(IndexFormatError, match=message + r".*; rebuild with `ragnet index`$"):
        ChunkStore.open(folder)


def test_unreadable_or_missing_sidecar(folder, tmp_path):
    (folder / IDS).write_bytes(b"garbage")
    with pytest.raises(IndexFormatError, match=r"chunks\.ids\.npy unreadable"):
        ChunkStore.open(folder)
    (folder / IDS).unlink()
    with pytest.raises(IndexFormatError, match=r"incomplete: chunks\.ids\.npy is missing"):
        ChunkStore.open(folder)
    with pytest.raises(IndexFormatError, match=r"chunks\.jsonl is missing"):
        ChunkStore.open(tmp_path / "nowhere")


def test_corrupt_line_fails_when_read_naming_the_line(folder, chunks):
    data = (folder / CHUNKS).read_bytes().splitlines(keepends=True)
    row = 4
    # same length, so the offsets still match: break the JSON
    data[row] = b"[" + data[row][1:]
    (folder / CHUNKS).write_bytes(b"".join(data))
    with ChunkStore.open(folder) as s:
        assert s[row - 1] == stored(chunks[row - 1])
        with pytest.raises(IndexFormatError, match=rf"chunks\.jsonl:{row + 1} is not a chunk record"):
            s[row]
        with pytest.raises(IndexFormatError, match=rf"chunks\.jsonl:{row + 1} "):
            list(s)


def test_ids_that_disagree_with_the_lines_are_caught(folder, chunks):
    id_rows = np.load(folder / ID_ROWS, allow_pickle=False)
    np.save(folder / ID_ROWS, np.roll(id_rows, 1), allow_pickle=False)
    with ChunkStore.open(folder) as s:
        with pytest.raises(IndexFormatError, match=r"chunks\.ids\.npy maps"):
            s.chunk(chunks[0].id)


# -- memory and lifetime ---------------------------------------------------------------


BIG = 200_000


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    """A store of BIG tiny chunks (written once for the module)."""
    folder = tmp_path_factory.mktemp("big") / "store"
    with ChunkStoreWriter(folder) as w:
        for i in range(BIG):
            w.add(Chunk(id=f"d{i}#0", doc_id=f"d{i}", title="", text="t", tokens=1))
    return folder


def test_open_makes_no_chunk_objects(big_store, monkeypatch):
    made = []
    real_init = Chunk.__init__

    def counting_init(self, *args, **kwargs):
        made.append(1)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Chunk, "__init__", counting_init)
    with ChunkStore.open(big_store, count=BIG) as store:
        assert made == []
        assert len(store) == BIG
        assert store.row("d123456#0") == 123456 and store.rows(["d7#0", "d199999#0"]).tolist() == [7, BIG - 1]
        assert store.id_at(42) == "d42#0"
        assert made == []  # id lookups do not parse chunks either
        assert store[-1].id == f"d{BIG - 1}#0"
        assert len(made) == 1


def test_cache_returns_the_same_object_and_close_stops_reads(folder):
    s = ChunkStore.open(folder, cache_size=2)
    assert s[0] is s[0]
    s.close()
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s[1]
    uncached = ChunkStore.open(folder, cache_size=0)
    assert uncached[0] == uncached[0] and uncached[0] is not uncached[0]
    uncached.close()


def test_threads_read_the_right_chunks(folder, chunks):
    want = [stored(c) for c in chunks]
    errors: list[str] = []
    with ChunkStore.open(folder, cache_size=4) as s:  # small cache: most reads hit the file

        def reader(seed: int) -> None:
            rng = random.Random(seed)
            for _ in range(300):
                r = rng.randrange(len(want))
                if s[r] != want[r] or s.row(want[r].id) != r:
                    errors.append(f"row {r}")
            if list(s) != want:
                errors.append("iteration")

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
