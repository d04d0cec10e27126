"""Peak memory of reading and chunking one file, measured in a fresh interpreter (issue 47).

:func:`measure` runs ``load_documents([path], max_file_mb=...)`` and ``chunk_documents`` (256/32
tokens, as ``ragnet index``) in a subprocess whose parsers are imported and warmed up first, and
returns how far its peak resident memory rose above what it held before the file was read, with
the outcome (the chunk count, or the one-line refusal). Used by ``test_file_memory.py`` at a
reduced bound and by ``python -m benchmarks.file_memory`` at the default one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_PROBE = r"""
import json, resource, sys, warnings
from ragnet.corpus.loader import load_documents
from ragnet.corpus.chunking import chunk_documents
from ragnet.corpus.tokens import count_tokens
from ragnet.errors import InputError
import bs4, docx, pypdf, lxml.etree  # the parsers' own weight is not the file's
from ragnet.corpus.formats import html as _h, docx as _d, pdf as _p
count_tokens("warm up")

def status_kb(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":"))

try:  # forget the imports' peak (Linux 4.0+): VmHWM then rises only with the file's work
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    peak_key = "VmHWM"
except OSError:
    peak_key = None
before = status_kb("VmRSS")
path, bound = sys.argv[1], float(sys.argv[2])
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunks = chunk_documents(load_documents([path], max_file_mb=bound), 256, 32)
    outcome = f"read: {len(chunks)} chunks"
except InputError as err:
    outcome = "refused: " + str(err).split(": ", 1)[1]
peak = status_kb(peak_key) if peak_key else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_mb": max(0, peak - before) / 1024, "outcome": outcome}))
"""


def measure(path: str | Path, max_file_mb: float, timeout: float = 600) -> dict:
    """``{"peak_mb": float, "outcome": str}`` for reading and chunking ``path`` (see the module docstring)."""
    done = subprocess.run([sys.executable, "-c", _PROBE, str(path), str(max_file_mb)], capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"the probe failed on {path}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
