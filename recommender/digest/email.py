"""Digest emails: a reading list rendered as one multipart/alternative email message.

The plain-text and HTML bodies come from the Jinja2 templates ``templates/digest.txt`` and
``templates/digest.html`` (HTML autoescaped: titles, reasons and abstracts may hold ``<`` and
``&``). Each paper is shown as on the pages (``ItemView``, ``ranking/item_view.py``): title,
authors, year and category, where it stands and why, the abstract's first sentences, links.
The message carries one-click unsubscribe headers (RFC 2369 and RFC 8058); sending
it, signing it (DKIM must cover both List-Unsubscribe headers) and serving the links are the
caller's job.
"""

from __future__ import annotations

import datetime as dt
import email.policy
import email.utils
import functools
from dataclasses import dataclass
from email.message import EmailMessage

import jinja2

from recommender.core.papers import web_url
from recommender.ranking.item_view import ItemView

HOW_OFTEN = {"daily": "every day", "weekly": "every week"}

# Header lines may be as long as RFC 5322 allows, so a long unsubscribe URL is never folded
# into RFC 2047 encoded words that mail clients would not read as a URL. The bodies keep the
# default policy: quoted-printable lines of at most 76 characters.
_HEADER_POLICY = email.policy.default.clone(max_line_length=998)


@dataclass(frozen=True)
class DigestItem:
    paper: ItemView  # title, authors, abstract's lead, links (http(s) only), reason, standing
    more_like_this_url: str  # one-click link that records a like
    not_interested_url: str  # one-click link that records a dislike
    # The title's link: logs a click on the paper (of its list) and leads to it. "": the
    # paper's own http(s) URL, if any, is the title's link.
    open_url: str = ""

    @property
    def paper_id(self) -> str:
        return self.paper.id


@dataclass(frozen=True)
class DigestSection:
    """The list of one of the reader's collections, below the overall list."""

    name: str  # the collection's name
    items: list[DigestItem]


@dataclass(frozen=True)
class DigestContent:
    user_id: str
    items: list[DigestItem]
    unsubscribe_url: str  # the visible "Unsubscribe" link in both bodies
    frequency: str  # "daily" | "weekly"
    personalized: bool  # false: tell the reader the list will improve as they react
    period_label: str  # e.g. "week of 2026-11-30" or "2026-11-30"
    sections: tuple[DigestSection, ...] = ()  # one per collection with papers to show
    notice: str | None = None  # a problem the reader should fix (their Zotero sync failing)


def render_digest(content: DigestContent, sender: str, recipient: str, message_id: str,
                  unsubscribe_post_url: str) -> EmailMessage:
    """The digest as a multipart/alternative message (text/plain, then text/html).

    ``message_id`` is used as given, angle brackets included (``email.utils.make_msgid``);
    ``unsubscribe_post_url`` goes into List-Unsubscribe and must accept the RFC 8058
    one-click POST. Raises ValueError for a digest without items or an unknown frequency.
    """
    if not content.items:
        raise ValueError("a digest needs at least one item")
    if content.frequency not in HOW_OFTEN:
        raise ValueError(f"frequency must be one of {sorted(HOW_OFTEN)}, "
                         f"got {content.frequency!r}")
    count = len(content.items)
    count_text = f"{count} paper{'' if count == 1 else 's'}"
    period = _period_phrase(content.period_label)
    context = {
        "content": content,
        "count_text": count_text,
        "period": period,
        "how_often": HOW_OFTEN[content.frequency],
        "recipient_address": email.utils.parseaddr(recipient)[1] or recipient,
    }
    env = _environment()
    msg = EmailMessage(policy=_HEADER_POLICY)
    msg["From"] = sender
    msg["To"] = recipient
    msg["Subject"] = f"Your paperrec reading list: {count_text} for {period}"
    msg["Date"] = email.utils.format_datetime(dt.datetime.now(dt.UTC))
    msg["Message-ID"] = message_id
    msg["List-Unsubscribe"] = f"<{unsubscribe_post_url}>"
    msg["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    msg.make_alternative()
    msg.attach(_body(env.get_template("digest.txt").render(context), "plain"))
    msg.attach(_body(env.get_template("digest.html").render(context), "html"))
    return msg


def _period_phrase(label: str) -> str:
    """ "week of 2026-11-30" reads "the week of 2026-11-30"; a bare date stays as it is."""
    return f"the {label}" if label.startswith("week") else label


def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _is_web_url(value: object) -> bool:
    return web_url(value) is not None


def _body(text: str, subtype: str) -> EmailMessage:
    part = EmailMessage(policy=email.policy.default)
    part.set_content(text, subtype=subtype, cte="quoted-printable")
    return part


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("recommender.digest", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",),
                                            default_for_string=False, default=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["first_upper"] = _first_upper
    env.tests["web_url"] = _is_web_url
    return env
