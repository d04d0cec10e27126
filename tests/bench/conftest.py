"""The index tests' corpus and built index, shared with the index benchmarks' tests."""

from tests.index.conftest import QUERIES, built, docs, embedder, make_docs  # noqa: F401
