"""What the forms and links of one page share, worked out once per page: the CSRF token, the
address of the follow and mute forms, and the per-paper addresses (its page, its rating and
collection forms) made from one built address each.

A page of ten papers has some fifty forms and links; asking ``url_for`` and ``csrf_token``
for each was a third of the list page's rendering time. Templates call ``form_parts()``
(``_papers.html``, ``_rules.html``, ``partials/_collect.html``); what it gives lives in
``g``, the request's, and never longer: the token is the reader's session's, and the
addresses carry the request's script root.
"""

from __future__ import annotations

from urllib.parse import quote

from flask import g, url_for
from flask_wtf.csrf import generate_csrf

from .blueprint import web

# What a paper id's characters become in a path (werkzeug's PathConverter.to_url, the
# converter of every ``<path:paper_id>``): the same quoting, so the same addresses.
PATH_SAFE = "!$&'()*+,/:;=@"
_SLOT = "~paper~"  # stands for the paper id while an address is built (safe: not quoted)


class FormParts:
    """One page's token and addresses (``form_parts()`` in a template)."""

    def __init__(self) -> None:
        self.token = generate_csrf()
        self.add_rule = url_for("web.add_rule")
        self._paper = self._split("web.paper")
        self._rate = self._split("web.rate")
        self._collect = self._split("web.collect")

    @staticmethod
    def _split(endpoint: str) -> tuple[str, str]:
        before, _, after = url_for(endpoint, paper_id=_SLOT).partition(_SLOT)
        return before, after

    def paper(self, paper_id: str) -> str:
        """``url_for("web.paper", paper_id=paper_id)``."""
        return _with(self._paper, paper_id)

    def rate(self, paper_id: str) -> str:
        """``url_for("web.rate", paper_id=paper_id)``."""
        return _with(self._rate, paper_id)

    def collect(self, paper_id: str) -> str:
        """``url_for("web.collect", paper_id=paper_id)``."""
        return _with(self._collect, paper_id)


def _with(around: tuple[str, str], paper_id: str) -> str:
    return f"{around[0]}{quote(str(paper_id), safe=PATH_SAFE)}{around[1]}"


@web.app_template_global()
def form_parts() -> FormParts:
    """This request's ``FormParts``, made at its first use."""
    found = g.get("form_parts")
    if found is None:
        found = g.form_parts = FormParts()
    return found
