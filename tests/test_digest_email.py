"""Digest emails: rendered, serialised and parsed back as a mail client would."""

from __future__ import annotations

import dataclasses
import email
import email.policy
import html
from email.message import EmailMessage

import pytest
from markupsafe import escape

from recommender.core.papers import Paper
from recommender.digest.email import DigestContent, DigestItem, render_digest
from recommender.ranking.item_view import LEAD_CHARS, item_view, split_abstract

LINKS = "http://127.0.0.1:8000/v1/links/"
UNSUBSCRIBE = LINKS + "unsubscribe-tok?u=ada&k=1"
UNSUBSCRIBE_POST = "https://paperrec.example.org/v1/unsubscribe/one-click-token"
ABSTRACT = ("Federated learning often suffers from degraded generalization under statistical "
            "heterogeneity, where client updates systematically deviate from the global "
            "objective. ") * 4


AUTHORS = ["Ada Lovelace", "Grace Hopper", "Emmy Noether", "Alan Turing"]


def item(n: int, title: str, url: str | None = None,
         reason: str = "liked by 2 readers") -> DigestItem:
    paper = Paper(f"pl-{n:016x}", title, ABSTRACT, AUTHORS, 2026, url=url,
                  categories=["cs.LG"], code_urls=[f"https://github.com/ex/{n}"])
    return DigestItem(item_view(paper, reason=reason, standing="among your top 5"),
                      f"{LINKS}like-{n}", f"{LINKS}dislike-{n}")


ITEMS = [
    item(1, "FedScar: federated optimization that corrects heterogeneity",
         "https://openreview.net/forum?id=abc&ref=mail",
         "similar to 'FedReLa: a data-level approach' that you liked"),
    item(2, 'Why <script>alert("x")</script> & "quotes" break naive templates'),
    item(3, "PIAA: Patch-level Inference followed by Adaptive Aggregation",
         reason="readers with similar taste saved it"),
]


def content(items: list[DigestItem] = ITEMS, personalized: bool = True) -> DigestContent:
    return DigestContent("ada", items, UNSUBSCRIBE, "weekly", personalized, "week of 2026-11-30")


def send(digest: DigestContent, unsubscribe_post: str = UNSUBSCRIBE_POST) -> EmailMessage:
    msg = render_digest(digest, "paperrec <digest@paperrec.example.org>",
                        "Ada Lovelace <ada@example.org>", "<digest-1@paperrec.example.org>",
                        unsubscribe_post)
    parsed = email.message_from_bytes(msg.as_bytes(), policy=email.policy.default)
    assert isinstance(parsed, EmailMessage)
    return parsed


def bodies(msg: EmailMessage) -> tuple[str, str]:
    text, page = msg.get_body(("plain",)), msg.get_body(("html",))
    assert text is not None and page is not None
    return text.get_content(), page.get_content()


def test_digest_is_multipart_alternative_with_every_title_and_link() -> None:
    msg = send(content())
    assert msg.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in msg.iter_parts()] == ["text/plain", "text/html"]
    text, page = bodies(msg)
    for it in ITEMS:
        assert it.paper.title in text
        assert str(escape(it.paper.title)) in page
        assert it.paper.title in html.unescape(page)
        # authors shortened, year and category by name, where it stands and why, the code
        for shown in ("A. Lovelace, G. Hopper, E. Noether et al. · 2026 · Machine Learning "
                      "(cs.LG)", f"Among your top 5 · {it.paper.reason}",
                      f"Code: https://github.com/ex/{int(it.paper_id[3:], 16)}"):
            assert shown in " ".join(text.split())
        assert "A. Lovelace, G. Hopper, E. Noether et al. &middot; 2026" in page
        assert "Among your top 5" in page and "likely worth reading" not in text + page
        assert f"More like this: {it.more_like_this_url}" in text
        assert f"Not interested: {it.not_interested_url}" in text
        for url in (it.more_like_this_url, it.not_interested_url):
            assert f'href="{url}"' in page
    assert f"Unsubscribe: {UNSUBSCRIBE}" in text
    assert f'href="{escape(UNSUBSCRIBE)}"' in page
    assert f'href="{escape(ITEMS[0].paper.url)}"' in page
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_headers_offer_one_click_unsubscribe() -> None:
    msg = send(content())
    assert msg["List-Unsubscribe"] == f"<{UNSUBSCRIBE_POST}>"
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert msg["Subject"] == "Your paperrec reading list: 3 papers for the week of 2026-11-30"
    assert msg["Message-ID"] == "<digest-1@paperrec.example.org>"
    assert msg["From"].addresses[0].addr_spec == "digest@paperrec.example.org"
    assert msg["To"].addresses[0].addr_spec == "ada@example.org"
    assert msg["Date"].datetime is not None


def test_a_long_unsubscribe_url_stays_a_url_on_the_wire() -> None:
    long_url = UNSUBSCRIBE_POST + "/" + "t" * 200
    digest = content()
    raw = render_digest(digest, "digest@paperrec.example.org", "ada@example.org",
                        "<digest-2@paperrec.example.org>", long_url).as_bytes()
    assert f"\nList-Unsubscribe: <{long_url}>".encode() in raw  # no encoded words, no folding
    assert max(len(line) for line in raw.splitlines()) <= 998


def test_a_new_reader_is_told_the_list_improves_as_they_react() -> None:
    text, page = bodies(send(content(personalized=False)))
    assert "your next list will be about what you like" in text
    assert "React with the buttons below and your next list will be about what you like." in page
    text, page = bodies(send(content(personalized=True)))
    assert "next list" not in text and "next list" not in page


def test_one_paper_daily_digest_without_a_web_link() -> None:
    lone = item(4, "A paper with no link", url="javascript:alert(1)")
    digest = dataclasses.replace(content([lone]), frequency="daily", period_label="2026-11-30")
    msg = send(digest)
    assert msg["Subject"] == "Your paperrec reading list: 1 paper for 2026-11-30"
    text, page = bodies(msg)
    assert "javascript:" not in text and "javascript:" not in page
    assert "every day" in text and "every day" in page


def test_the_abstract_shows_its_first_sentences() -> None:
    lead, rest = split_abstract(ABSTRACT)
    first = ABSTRACT.split(". ")[0] + "."
    assert lead == first and len(lead) <= LEAD_CHARS  # two would be longer than LEAD_CHARS
    assert f"{lead} {rest}" == " ".join(ABSTRACT.split())
    assert split_abstract("a short abstract") == ("a short abstract", "")
    text, page = bodies(send(content()))
    assert lead in page and ABSTRACT.strip() not in page
    assert " ".join(text.split()).count(lead) == len(ITEMS)


@pytest.mark.parametrize("digest", [
    content(items=[]),
    dataclasses.replace(content(), frequency="monthly"),
])
def test_empty_digests_and_unknown_frequencies_are_refused(digest: DigestContent) -> None:
    with pytest.raises(ValueError):
        send(digest)


def test_a_problem_to_fix_shows_in_the_footer_of_both_bodies() -> None:
    notice = ("Your Zotero library no longer syncs: Zotero refused the key <revoked>. "
              "Connect it again on your Library page.")
    text, page = bodies(send(dataclasses.replace(content(), notice=notice)))
    assert " ".join(text.split("\n-- \n", 1)[1].split()).startswith(" ".join(notice.split()))
    footer = page.split("You get this email because", 1)[0].rsplit("<tr>", 1)[1]
    assert str(escape(notice)) in footer and "<revoked>" not in page
    text, page = bodies(send(content()))
    assert "Zotero" not in text and "Zotero" not in page
