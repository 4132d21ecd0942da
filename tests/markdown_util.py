"""What a real Markdown renderer (markdown-it-py: CommonMark plus GFM tables and strikethrough,
raw HTML on) makes of bootlog's Markdown: the tags it produced and the text a reader sees."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

# what bootlog's own Markdown builds; anything else (a link, an image, emphasis, raw HTML, a
# heading or list it did not write) came out of log text
OWN_TAGS = frozenset({"p", "strong", "code", "h3", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "br"})
_RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def rendered(md: str) -> str:
    return _RENDERER.render(md)


def tags(md: str) -> set[str]:
    return set(re.findall(r"<([A-Za-z][A-Za-z0-9]*)", rendered(md)))


def texts(md: str) -> list[str]:
    """The text of each inline run as a reader sees it (a paragraph, a cell, a list item), code
    spans included, in document order; after each run, its code spans' contents on their own."""
    out = []
    for tok in _RENDERER.parse(md):
        if tok.type == "inline":
            kids = tok.children or ()
            out.append(
                "".join(
                    "\n" if c.type in ("softbreak", "hardbreak") else c.content
                    for c in kids
                    if c.type in ("text", "code_inline", "softbreak", "hardbreak")
                )
            )
            out += [c.content for c in kids if c.type == "code_inline"]
    return out


def inert(md: str, own: frozenset[str] = OWN_TAGS) -> list[str]:
    """Assert the document renders to bootlog's own structure only; the texts a reader sees."""
    extra = tags(md) - own
    assert not extra, f"{sorted(extra)} rendered from: {md}"
    return texts(md)
