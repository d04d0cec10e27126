"""What the index embeds and BM25-indexes for a chunk.

Example:
    >>> from ragnet.corpus.types import Chunk
    >>> passage_text(Chunk(id="a#0", doc_id="a", title="Paris", text="It is big.", tokens=3))
    'Paris\\nIt is big.'
"""

from __future__ import annotations

from ragnet.corpus.types import Chunk

PASSAGE_FORMAT = "title\\ntext"  # recorded in the manifest


def passage_text(chunk: Chunk) -> str:
    """The text that is embedded and BM25-indexed for ``chunk``: title line + chunk text.

    Titles often carry the entity a passage is about ("He was born in ..."), so both
    retrievers see them. The title is not repeated when the text already starts with it.
    """
    title = chunk.title.strip()
    if not title:
        return chunk.text
    head, key = chunk.text.lstrip("# \t\n").casefold(), title.casefold()
    if head.startswith(key) and (len(head) == len(key) or not head[len(key)].isalnum()):
        return chunk.text  # the text already opens with its title (e.g. a Markdown heading)
    return f"{title}\n{chunk.text}"
