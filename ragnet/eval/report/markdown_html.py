"""``report.md`` as the HTML of ``report.html``'s summary, rendered by markdown-it-py.

The report's Markdown (headings, paragraphs, tables, lists, quotes, bold, emphasis, code and
the plot images) becomes HTML, and nothing else in it does: raw HTML, links and HTML entities
are not parsed, so they reach the page as escaped text, and a set name or strategy label holding
``<script>`` shows as text. Headings move one level down (the page's title is its ``h1``, so
the report's own title is left out), tables get the page's ``t`` class, and each plot is read
from the run folder and embedded as a ``data:`` URI (a plot that is not there is named instead).

Example:
    >>> print(markdown_html("# ragnet eval: toy\\n\\n## Accuracy\\n\\n**EM** <b>x</b> [a](javascript:x)\\n", None))
    <h3>Accuracy</h3>
    <p><strong>EM</strong> &lt;b&gt;x&lt;/b&gt; [a](javascript:x)</p>
    <BLANKLINE>
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["markdown_html"]


def _data_uri(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _image(renderer: Any, tokens: Sequence[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
    """A plot of the run folder, embedded; only its file name is read from the Markdown."""
    from markdown_it.common.utils import escapeHtml

    token = tokens[idx]
    name = Path(token.attrGet("src") or "").name
    folder = env.get("folder")
    uri = _data_uri(folder / name) if folder is not None and name.endswith(".png") else None
    if uri is None:
        return f'<span class="na">plot {escapeHtml(name)} not found beside the report</span>'
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    return f'<img class="plot" alt="{escapeHtml(alt)}" title="{escapeHtml(name)}" src="{uri}">'


def markdown_html(markdown: str, folder: str | Path | None) -> str:
    """The HTML of ``markdown`` (the text of a ``report.md``) for the page's summary.

    Args:
        markdown: the report.
        folder: where the plots the report names are read from (None: each is named as missing).
    """
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    parser.disable(["html_block", "html_inline", "link", "autolink", "entity"])
    parser.add_render_rule("image", _image)
    env = {"folder": Path(folder) if folder is not None else None}
    tokens = parser.parse(markdown, env)
    if tokens and tokens[0].type == "heading_open" and tokens[0].tag == "h1":  # the page has its own title
        tokens = tokens[next(i for i, t in enumerate(tokens) if t.type == "heading_close") + 1:]
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"
        elif token.type == "table_open":
            token.attrSet("class", "t")
    return parser.renderer.render(tokens, parser.options, env)
