"""MkDocs hook: render the Sphinx roles of our docstrings as plain code.

Docstrings say :class:`Outcome` or :func:`~.routing.table_age` (Sphinx style); mkdocstrings
renders Markdown, where the role would show as literal text. This keeps the code span and drops
the role (and, as Sphinx does for ``~``, every dotted prefix).
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj):<code>~?([^<]*)</code>")


def _shorten(match: re.Match[str]) -> str:
    target = match.group(1)
    if match.group(0).split("<code>", 1)[1].startswith("~") or target.startswith("."):
        target = target.rsplit(".", 1)[-1]
    return f"<code>{target}</code>"


def on_page_content(html: str, **kwargs: object) -> str:
    """Replace Sphinx roles in a rendered page with plain code spans."""
    return _ROLE.sub(_shorten, html)
