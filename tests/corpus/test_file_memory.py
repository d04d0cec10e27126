"""Peak memory of indexing one hostile file stays within 1 GB at the default bound (issue 47):
measured here against a bound ten times smaller (``max_file_mb=2``, so at most 100 MB), each
file in a fresh interpreter (:mod:`tests.corpus.file_memory`).

Before: a 300 KB HTML title took 3.1 GB (the title was copied into every chunk), a 201 KB DOCX
holding 48 MB of paragraphs 5.9 GB, a PDF whose pages share one 8 MB content stream passed 8 GB.
``python -m benchmarks.file_memory`` prints the same cases at the default bound (20 MB).
"""

from __future__ import annotations

import random

import pytest

from tests.corpus import hostile_files as hf
from tests.corpus.file_memory import measure

BOUND_MB = 2
LIMIT_MB = 1000 * BOUND_MB / 20  # 1 GB at the default 20 MB, scaled with the bound


def _word(n: int) -> bytes:
    return "".join(random.Random(0).choices("abcdefghijklmnopqrstuvwxyz", k=n)).encode()


#: name -> (the file at k times the test's size, what happens to it); the sizes are the issue's
#: scaled to the reduced bound (``python -m benchmarks.file_memory`` builds them at k = 10)
CASES = {
    "title.html": (lambda k: hf.html_title(int(750_000 * k)), "read"),               # a 750 KB <title>
    "heading.md": (lambda k: hf.markdown_heading(int(500_000 * k)).encode(), "read"),  # a 500 KB heading
    "title.pdf": (lambda k: hf.pdf_long_title("Budget " * int(70_000 * k)), "read"),   # a 490 KB /Title
    "word.txt": (lambda k: _word(int(1_900_000 * k)), "read"),                        # 1.9 MB, one word
    "paragraphs.docx": (lambda k: hf.docx_paragraphs(int(1_500_000 * k)), "read"),    # within the bound
    "over.docx": (lambda k: hf.docx_paragraphs(int(5_000_000 * k)), "refused"),       # unpacks to 4.3 MB
    "bomb.docx": (lambda k: hf.docx_repeated(int(20_000_000 * k)), "refused"),        # 20 MB from 70 KB
    "shared.pdf": (lambda k: hf.pdf_shared_stream(5, int(800_000 * k)), "refused"),   # 5 pages x 0.8 MB
    "elements.html": (lambda k: hf.html_elements(int(38_000 * k)), "read"),           # just within the bound
    "nested.html": (lambda k: hf.html_nested(int(20_000 * k), "div"), "read"),        # 20,000 nested divs
    "font.html": (lambda k: hf.html_nested(int(2_000 * k), "font", closed=False), "read"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_reading_and_chunking_one_hostile_file_stays_within_its_share_of_memory(tmp_path, name):
    make, expected = CASES[name]
    path = tmp_path / name
    path.write_bytes(make(1))
    got = measure(path, BOUND_MB)
    assert got["outcome"].startswith(expected), got
    assert got["peak_mb"] <= LIMIT_MB, got
