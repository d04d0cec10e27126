"""Docstring examples (``pytest --doctest-modules ragnet``) run offline on a tiny real index.

Examples that need an index use ``index`` (three one-sentence documents: Paris, Rome, Tea,
built once per session with the bundled embedder); examples that need an LM use DSPy's
``DummyLM``, never a live model.
"""

import os

for _name, _value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
                      ("TOKENIZERS_PARALLELISM", "false"), ("OMP_NUM_THREADS", "2")):
    os.environ.setdefault(_name, _value)

import pytest


@pytest.fixture(scope="session")
def _doctest_index(tmp_path_factory):
    from ragnet.corpus.types import Document
    from ragnet.index import Index

    docs = [Document(id="paris", title="Paris", text="Paris is the capital of France."),
            Document(id="rome", title="Rome", text="Rome is the capital of Italy."),
            Document(id="tea", title="Tea", text="Tea is a drink made from leaves.")]
    return Index.build(docs, tmp_path_factory.mktemp("doctest") / "index", show_progress=False)


@pytest.fixture(autouse=True)
def _doctest_names(request, doctest_namespace):
    """``index`` for the docstring examples that use one (built on the first such example)."""
    test = getattr(request.node, "dtest", None)  # set on doctest items only
    if test is not None and any("index" in example.source for example in test.examples):
        doctest_namespace["index"] = request.getfixturevalue("_doctest_index")
