"""FileArray: on-disk .npy rows read with pread give what the memory map gives, and stay unmapped."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ragnet.errors import IndexFormatError
from ragnet.index.file_array import FileArray, file_backed


@pytest.fixture
def saved(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"rows": rng.standard_normal((50, 7)).astype(np.float16),
              "flat": rng.integers(0, 1000, size=301).astype(np.int32)}
    paths = {}
    for name, arr in arrays.items():
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], arr)
    return arrays, paths


def test_slices_and_rows_equal_the_memory_map(saved):
    arrays, paths = saved
    for name, expected in arrays.items():
        mapped = np.load(paths[name], mmap_mode="r")
        arr = FileArray(mapped)
        assert arr.shape == expected.shape and arr.dtype == expected.dtype and len(arr) == len(expected)
        for a, b in [(0, 0), (0, 1), (3, 17), (0, len(expected)), (40, 10_000), (-5, None)]:
            got = arr[a:b]
            assert isinstance(got, np.ndarray) and not isinstance(got, np.memmap)
            np.testing.assert_array_equal(got, expected[a:b])
        rows = np.array([4, 0, 4, len(expected) - 1, -1])
        np.testing.assert_array_equal(arr[rows], expected[rows])
        np.testing.assert_array_equal(arr[np.zeros(0, dtype=np.int64)], expected[np.zeros(0, dtype=np.int64)])
        np.testing.assert_array_equal(arr[np.array([[1, 2], [3, 4]])], expected[np.array([[1, 2], [3, 4]])])


def test_bad_keys_are_refused(saved):
    _, paths = saved
    arr = FileArray(np.load(paths["rows"], mmap_mode="r"))
    with pytest.raises(IndexError, match="out of range"):
        arr[np.array([50])]
    with pytest.raises(IndexError, match="out of range"):
        arr[np.array([-51])]
    with pytest.raises(IndexError, match="step 1"):
        arr[::2]
    with pytest.raises(IndexError, match="integer rows"):
        arr[np.array([0.5])]


def test_a_file_truncated_after_opening_is_an_index_error_naming_it(saved):
    arrays, paths = saved
    arr = FileArray(np.load(paths["flat"], mmap_mode="r"))
    with open(paths["flat"], "r+b") as fh:
        fh.truncate(200)
    np.testing.assert_array_equal(arr[0:2], arrays["flat"][0:2])  # rows still inside the file read fine
    with pytest.raises(IndexFormatError, match="flat.npy ended at byte"):
        arr[250:301]


def test_only_file_backed_memory_maps_are_wrapped(saved):
    arrays, paths = saved
    assert isinstance(file_backed(np.load(paths["rows"], mmap_mode="r")), FileArray)
    in_ram = np.load(paths["rows"])
    assert file_backed(in_ram) is in_ram
    with pytest.raises(TypeError, match="np.memmap"):
        FileArray(in_ram)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_reading_leaves_no_mapping_of_the_file(saved):
    _, paths = saved
    arr = FileArray(np.load(paths["rows"], mmap_mode="r"))  # the memmap is dropped right away
    arr[0:50], arr[np.arange(50)]
    with open("/proc/self/maps", encoding="utf-8") as fh:
        assert str(paths["rows"]) not in fh.read()
