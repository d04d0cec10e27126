"""An index folder is untrusted input: ``Index.load`` of a tampered folder fails with one line that
names the file and says to rebuild. It never opens a file outside the folder, never allocates more
than the folder holds, never dies of a signal and never serves ids that point nowhere.

Every case tampers with a copy of a real index (the bundled embedder on the test corpus) the way an
attacker who also rewrites the manifest's checksums would.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from ragnet.errors import IndexFormatError
from ragnet.index import DenseOptions, Index
from ragnet.index.ivfpq import IVFPQParams

from .conftest import make_docs

ROOT = Path(__file__).resolve().parents[2]


# -- helpers ---------------------------------------------------------------------------
def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _rehash(folder: Path, manifest: dict | None = None) -> None:
    """Rewrite the manifest with checksums that match the (tampered) files, as an attacker would."""
    m = manifest if manifest is not None else _manifest(folder)
    for rel in m["files"]:
        f = folder / rel
        if f.is_file():
            m["files"][rel] = hashlib.sha256(f.read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(m))


def _refused(folder: Path, names: str, **load) -> str:
    """Load ``folder``; it must fail with one IndexFormatError line naming ``names`` and saying rebuild."""
    with pytest.raises(IndexFormatError) as info:
        Index.load(folder, **load)
    message = str(info.value)
    assert "\n" not in message and "rebuild" in message
    assert names in message, message
    return message


def _copy(index: Index, tmp_path: Path, name: str = "copy") -> Path:
    dst = tmp_path / name
    shutil.copytree(index.path, dst)
    return dst


_LOAD_SCRIPT = """
import sys
from ragnet.errors import IndexFormatError
from ragnet.index import Index
try:
    index = Index.load(sys.argv[1])
    print("LOADED", [c.id for c in index.search("capital of Japan", k=3)])
except IndexFormatError as exc:
    print("REFUSED", exc)
# the peak RSS of this program (ru_maxrss would include the parent's, from before exec)
with open("/proc/self/status") as fh:
    print("RSS_MB", next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) // 1024)
"""


def _load_in_subprocess(folder: Path) -> tuple[int, str, int]:
    """Load (and search) ``folder`` in a child process, so a signal death is a test failure, not
    pytest's. Returns the exit status (negative: killed by that signal), its output, its peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _LOAD_SCRIPT, str(folder)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    rss = [int(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("RSS_MB")]
    return proc.returncode, proc.stdout + proc.stderr, rss[0] if rss else -1


# -- an audit hook that records which watched files Python opens ------------------------
_WATCHED: set[str] = set()
_OPENED: list[str] = []
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _WATCHED and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if path in _WATCHED:
            _OPENED.append(path)


@pytest.fixture
def opened():
    """``(watch, opened)``: paths to watch and the list of those opened while the test ran."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)  # hooks cannot be removed; this one is inert while nothing is watched
        _HOOKED = True
    _OPENED.clear()
    yield _WATCHED, _OPENED
    _WATCHED.clear()
    _OPENED.clear()


# -- kinds other than flat, built from the test index's own chunks and vectors ----------
@pytest.fixture(scope="module")
def other_kinds(built, tmp_path_factory):
    """An ``ivf`` and an on-disk ``ivfpq`` index of the test corpus."""
    root = tmp_path_factory.mktemp("kinds")
    chunks = list(built.chunks)
    vectors = built.vectors([c.id for c in chunks])
    name = built.manifest["embedder"]
    ivf = Index.build_from_shards([(chunks, vectors)], root / "ivf", count=len(chunks), embedder=name,
                                  dense=DenseOptions(kind="ivf"), show_progress=False)
    params = IVFPQParams(nlist=2, m=8, nbits=4, nprobe=2)  # small enough to train on 30 vectors
    pq = Index.build_from_shards([(chunks[:15], vectors[:15]), (chunks[15:], vectors[15:])], root / "pq",
                                 count=len(chunks), embedder=name, dense=DenseOptions(kind="ivfpq", ivfpq=params),
                                 show_progress=False)
    return {"ivf": ivf, "ivfpq": pq}


# -- files outside the folder ----------------------------------------------------------
@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_a_manifest_naming_a_file_outside_the_folder_is_refused_before_it_is_opened(index_copy, tmp_path, opened,
                                                                                    how):
    outside = tmp_path / "outside.txt"
    outside.write_text("a file that is not part of the index\n")
    name = str(outside) if how == "absolute" else "../outside.txt"
    m = _manifest(index_copy)
    m["files"][name] = hashlib.sha256(outside.read_bytes()).hexdigest()  # a matching checksum
    _rehash(index_copy, m)
    watch, seen = opened
    watch.add(os.path.realpath(outside))
    message = _refused(index_copy, repr(name))
    assert "outside the index folder" in message
    assert seen == []  # not even opened to hash it


def test_a_chunks_file_symlinked_outside_the_folder_is_refused(index_copy, tmp_path, opened):
    elsewhere = tmp_path / "elsewhere.jsonl"
    shutil.move(index_copy / "chunks.jsonl", elsewhere)
    os.symlink(elsewhere, index_copy / "chunks.jsonl")  # same bytes, same checksum
    watch, seen = opened
    watch.add(os.path.realpath(elsewhere))
    message = _refused(index_copy, "chunks.jsonl")
    assert "symbolic link" in message
    assert seen == []


def test_a_symlinked_subfolder_is_refused(index_copy, tmp_path):
    shutil.move(index_copy / "bm25", tmp_path / "bm25-elsewhere")
    os.symlink(tmp_path / "bm25-elsewhere", index_copy / "bm25")
    assert "symbolic link" in _refused(index_copy, "bm25")


def test_a_file_the_loader_reads_must_be_listed_in_the_manifest(index_copy):
    m = _manifest(index_copy)
    del m["files"]["bm25/params.index.json"]  # still on disk, but no longer covered by a checksum
    (index_copy / "manifest.json").write_text(json.dumps(m))
    _refused(index_copy, "bm25/params.index.json")


@pytest.mark.parametrize("field, value", [("chunk_count", "thirty"), ("chunk_count", -1), ("dimension", 0),
                                          ("dimension", True), ("faiss_index", "annoy"), ("ivfpq", [1])])
def test_manifest_fields_of_the_wrong_type_are_refused(index_copy, field, value):
    m = _manifest(index_copy)
    m[field] = value
    (index_copy / "manifest.json").write_text(json.dumps(m))
    _refused(index_copy, "manifest.json")


# -- sizes checked before anything is mapped or allocated ------------------------------
def _rewrite_npy_header(path: Path, shape: tuple[int, ...]) -> None:
    """Keep ``path``'s data but make its header claim ``shape``."""
    arr = np.load(path, mmap_mode="r")
    body = path.read_bytes()[arr.offset:]
    dtype = arr.dtype
    del arr
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                  "fortran_order": False, "shape": shape})
        fh.write(body)


def test_an_npy_header_claiming_200m_rows_is_refused_from_the_header(index_copy):
    _rewrite_npy_header(index_copy / "embeddings.npy", (200_000_000, 384))
    _rehash(index_copy)
    tracemalloc.start()
    try:
        message = _refused(index_copy, "embeddings.npy")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "200000000" in message and "bytes" in message
    assert peak < 50 * 2**20


@pytest.mark.parametrize("name", ["chunks.offsets.npy", "bm25/indices.csc.index.npy", "catalog/title.rows.npy",
                                  "sentences/vectors.npy"])
def test_any_listed_npy_file_larger_on_paper_than_on_disk_is_refused_without_allocating(index_copy, name):
    arr = np.load(index_copy / name, mmap_mode="r")
    claim = (50_000_000, *arr.shape[1:])  # hundreds of MB on paper, a few hundred bytes on disk
    del arr
    _rewrite_npy_header(index_copy / name, claim)
    _rehash(index_copy)
    tracemalloc.start()
    try:
        _refused(index_copy, name)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20


def test_a_crafted_30kb_flat_faiss_file_is_refused_from_its_header_with_bounded_memory(index_copy):
    raw = bytearray((index_copy / "dense.faiss").read_bytes())
    assert raw[:4] == b"IxFI"
    # IndexFlatIP: fourcc, d (int32), ntotal (int64), 2 x int64, is_trained (1 byte), metric (int32), then the
    # vector length (uint64, in floats) and the floats. Claim 1 GiB of floats in a 30 KB file.
    raw[37:45] = np.uint64(2**28).tobytes()
    (index_copy / "dense.faiss").write_bytes(bytes(raw[:30_000]))
    _rehash(index_copy)
    message = _refused(index_copy, "dense.faiss")
    assert "bytes" in message
    rc, out, rss = _load_in_subprocess(index_copy)
    assert rc == 0 and "REFUSED" in out, out
    assert 0 < rss < 400, f"peak RSS {rss} MB loading a 30 KB dense.faiss: {out}"


def test_a_flat_faiss_header_that_disagrees_with_the_manifest_is_refused(index_copy):
    raw = bytearray((index_copy / "dense.faiss").read_bytes())
    raw[8:16] = np.int64(200_000_000).tobytes()  # ntotal
    (index_copy / "dense.faiss").write_bytes(bytes(raw))
    _rehash(index_copy)
    assert "200000000" in _refused(index_copy, "dense.faiss")


# -- IVF-PQ inverted lists on disk: size-checked before FAISS maps them ------------------
@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage"])
def test_a_damaged_ivfdata_file_is_refused_in_one_line_not_a_signal(other_kinds, tmp_path, damage):
    folder = _copy(other_kinds["ivfpq"], tmp_path)
    data = folder / "dense.ivfdata"
    raw = data.read_bytes()
    if damage == "empty":
        data.write_bytes(b"")
    elif damage == "truncated":
        data.write_bytes(raw[: len(raw) // 3])
    else:  # same size, random codes and ids
        data.write_bytes(np.random.default_rng(0).integers(0, 256, len(raw), dtype=np.uint8).tobytes())
    _rehash(folder)
    rc, out, _ = _load_in_subprocess(folder)
    assert rc == 0, f"the load died with status {rc}: {out[-2000:]}"
    refused = [line for line in out.splitlines() if line.startswith("REFUSED")]
    assert refused and "dense.ivfdata" in refused[0] and "rebuild" in refused[0], out


def test_an_intact_ivfpq_index_still_loads_and_searches(other_kinds):
    index = Index.load(other_kinds["ivfpq"].path)
    hits = index.search("capital of Japan", k=3)
    assert len(hits) == 3 and hits[0].title == "Tokyo"


def test_ivf_ids_out_of_range_are_refused_at_load(other_kinds, tmp_path):
    import faiss

    folder = _copy(other_kinds["ivf"], tmp_path)
    index = faiss.read_index(str(folder / "dense.faiss"))
    lists = faiss.extract_index_ivf(index).invlists
    first = next(i for i in range(lists.nlist) if lists.list_size(i))
    faiss.rev_swig_ptr(lists.get_ids(first), lists.list_size(first))[0] = 10_000
    faiss.write_index(index, str(folder / "dense.faiss"))
    _rehash(folder)
    assert "10000" in _refused(folder, "dense.faiss")


# -- ids read from files are range-checked once at load ---------------------------------
@pytest.mark.parametrize("bad", [37, -2])
def test_bm25_row_ids_out_of_range_are_refused_at_load(index_copy, bad):
    path = index_copy / "bm25" / "indices.csc.index.npy"
    indices = np.load(path)
    indices[0] = bad
    np.save(path, indices)
    _rehash(index_copy)
    _refused(index_copy, "indices.csc.index.npy")


def test_bm25_vocabulary_ids_out_of_range_are_refused_at_load(index_copy):
    path = index_copy / "bm25" / "vocab.index.json"
    vocab = json.loads(path.read_text())
    vocab[next(t for t in vocab if t)] = 10**6
    path.write_text(json.dumps(vocab))
    _rehash(index_copy)
    _refused(index_copy, "vocab.index.json")


@pytest.mark.parametrize("key, value", [("backend", "numba"), ("num_docs", -5), ("num_docs", 31), ("k1", "x"),
                                        ("method", "bm25+"), ("dtype", "object")])
def test_bm25_params_are_validated(index_copy, key, value):
    path = index_copy / "bm25" / "params.index.json"
    params = json.loads(path.read_text())
    params[key] = value
    path.write_text(json.dumps(params))
    _rehash(index_copy)
    _refused(index_copy, "params.index.json")


def test_tampered_id_rows_are_detected_instead_of_giving_wrong_titles(index_copy):
    path = index_copy / "chunks.id_rows.npy"
    id_rows = np.load(path)
    id_rows[[0, 1]] = id_rows[[1, 0]]  # still a permutation: every row in range, two ids swapped
    np.save(path, id_rows)
    _rehash(index_copy)
    _refused(index_copy, "chunks.id_rows.npy")


def test_id_rows_that_repeat_a_row_are_refused_without_verify(index_copy):
    path = index_copy / "chunks.id_rows.npy"
    id_rows = np.load(path)
    id_rows[0] = id_rows[1]
    np.save(path, id_rows)
    _refused(index_copy, "chunks.id_rows.npy", verify=False)


# -- a symlinked output folder ----------------------------------------------------------
def test_a_symlinked_out_is_written_through_and_stays_a_link(tmp_path, embedder):
    real = tmp_path / "disk" / "real"
    real.mkdir(parents=True)
    link = tmp_path / "out"
    os.symlink(real, link)
    docs = make_docs()[:3]
    for _ in range(2):  # into the empty target, then over the index now there
        index = Index.build(docs, link, embedder=embedder, sentences=False, show_progress=False)
        assert link.is_symlink() and os.readlink(link) == str(real)
        assert (real / "manifest.json").is_file()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []
        assert index.path == link and len(Index.load(link)) == len(index)
