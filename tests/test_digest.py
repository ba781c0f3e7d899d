"""The digest job against a real SMTP server (aiosmtpd: the ``inbox`` fixture) and a real Redis."""

from __future__ import annotations

import json
import re
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from recommender import wiring
from recommender.core.config import Settings
from recommender.core.errors import PaperrecError
from recommender.digest import job as digest
from recommender.digest.job import DigestSummary
from recommender.ranking.item_view import split_abstract
from replay.web_steps import confirm_address
from service.app import create_app
from tests.servers import Inbox

NOW = 1_796_000_000.0  # 2026-11-29, a Sunday
DAY = 86_400.0


def send(settings: Settings, now: float, dry_run_dir: Path | None = None) -> DigestSummary:
    """``paperrec digest`` at ``now`` (``--dry-run DIR`` when ``dry_run_dir`` is given)."""
    return wiring.build(settings).send_digests(now, dry_run=dry_run_dir, progress=False)


def subscribe(client: Any, inbox: Inbox, user: str, address: str, **extra: Any) -> None:
    """Subscribe with every item worth sending (``min_probability`` 0) unless a test sets its
    own bar: the sample corpus with the hashing embedder says little about probability. Then
    the address's reader confirms it: the confirmation email's link, its page's button (the
    email is taken out of the inbox, which then holds the digests only)."""
    extra.setdefault("min_probability", 0.0)
    response = client.put(f"/v1/users/{user}/subscription", json={"email": address, **extra})
    assert response.status_code == 200, response.json
    assert response.json["confirmed"] is False
    [message] = inbox.to(address)
    inbox.messages.remove(message)
    confirm_address(client, message)
    assert client.get(f"/v1/users/{user}/subscription").json["confirmed"] is True


def links(message: EmailMessage) -> dict[str, list[str]]:
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    found: dict[str, list[str]] = {}
    for label, url in re.findall(r"(More like this|Not interested|Unsubscribe)[^\n]*?(http\S+)",
                                 text):
        found.setdefault(label, []).append(url.replace("http://paperrec.test", ""))
    return found


def test_a_digest_arrives_with_both_parts_and_working_links(
    mail_settings: Settings, inbox: Inbox, like: Any, paper_ids_about: Any
) -> None:
    client = create_app(mail_settings).test_client()
    fed = paper_ids_about(mail_settings, "federated")
    like(client, "ada", fed[0])
    subscribe(client, inbox, "ada", "ada@example.org", frequency="daily", max_items=5)

    summary = send(mail_settings, NOW)
    assert (summary.due, summary.sent, summary.failed) == (1, 1, 0)
    [message] = inbox.to("ada@example.org")
    assert message.get_content_type() == "multipart/alternative"
    html = message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert "More like this" in html and "Not interested" in html
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert re.fullmatch(r"<http://paperrec\.test/v1/links/[\w.-]+>", message["List-Unsubscribe"])
    found = links(message)
    assert len(found["More like this"]) == len(found["Not interested"]) == 5

    # A mail scanner (or the reader) opening every link records nothing; the pages' buttons do.
    for url in [*found["More like this"], *found["Not interested"], *found["Unsubscribe"]]:
        assert client.get(url).status_code == 200
    assert len(client.get("/v1/users/ada/feedback").json["items"]) == 1
    assert client.get("/v1/users/ada/subscription").status_code == 200
    page = client.get(found["More like this"][0])
    assert re.search(r'<form method="post">\s*<button type="submit">', page.text)
    assert client.post(found["More like this"][0]).status_code == 200
    assert client.post(found["Not interested"][1]).status_code == 200
    signals = {i["signal"] for i in client.get("/v1/users/ada/feedback").json["items"]}
    assert signals == {"like", "dislike"} and len(client.get(
        "/v1/users/ada/feedback").json["items"]) == 3
    one_click = message["List-Unsubscribe"].strip("<>").replace("http://paperrec.test", "")
    assert client.post(one_click, data={"List-Unsubscribe": "One-Click"}).status_code == 200
    assert client.get("/v1/users/ada/subscription").status_code == 404


def test_a_second_run_in_the_same_period_sends_nothing(
    mail_settings: Settings, inbox: Inbox
) -> None:
    client = create_app(mail_settings).test_client()
    subscribe(client, inbox, "ada", "ada@example.org", frequency="weekly")
    assert send(mail_settings, NOW).sent == 1
    again = send(mail_settings, NOW + 3600)
    assert again.sent == 0 and again.skipped["already sent this period"] == 1
    next_week = send(mail_settings, NOW + 7 * DAY)
    assert next_week.sent == 1
    first, second = inbox.to("ada@example.org")
    signer = client.application.extensions["paperrec"].links

    def ids(message: EmailMessage) -> set[str]:  # the papers its "More like this" links name
        return {signer.verify(url.rsplit("/", 1)[1], NOW).paper_id
                for url in links(message)["More like this"]}

    assert ids(first) and ids(second)
    assert not ids(first) & ids(second)  # never the same paper twice


def test_a_refused_address_does_not_stop_the_others(
    mail_settings: Settings, inbox: Inbox
) -> None:
    client = create_app(mail_settings).test_client()
    subscribe(client, inbox, "bob", "bob@example.org")
    subscribe(client, inbox, "carol", "carol@example.org")
    inbox.closed.add("bob@example.org")  # closed since it confirmed
    summary = send(mail_settings, NOW)
    assert (summary.due, summary.sent, summary.failed) == (2, 1, 1)
    assert len(inbox.to("carol@example.org")) == 1


def test_a_crashed_job_run_again_sends_each_subscriber_exactly_once(
    mail_settings: Settings, inbox: Inbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = create_app(mail_settings).test_client()
    for user in ("u1", "u2", "u3"):
        subscribe(client, inbox, user, f"{user}@example.org")
    real_render = digest.render_digest
    calls = []

    def crash_on_second(*args: Any, **kwargs: Any) -> EmailMessage:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the machine went down")
        return real_render(*args, **kwargs)

    monkeypatch.setattr(digest, "render_digest", crash_on_second)
    with pytest.raises(RuntimeError):
        send(mail_settings, NOW)
    monkeypatch.setattr(digest, "render_digest", real_render)
    assert send(mail_settings, NOW).sent == 2
    assert sorted(m["To"] for m in inbox.messages) == [
        "u1@example.org", "u2@example.org", "u3@example.org"]


def test_two_jobs_at_once_do_not_both_send(mail_settings: Settings, inbox: Inbox) -> None:
    client = create_app(mail_settings).test_client()
    subscribe(client, inbox, "ada", "ada@example.org")
    other_job = client.application.extensions["paperrec"].subscriptions.lock(60)
    assert other_job.acquire()
    with pytest.raises(PaperrecError, match="another digest job is running"):
        send(mail_settings, NOW)
    assert inbox.messages == []
    other_job.release()
    assert send(mail_settings, NOW).sent == 1


def test_nothing_new_means_no_email(mail_settings: Settings, inbox: Inbox) -> None:
    client = create_app(mail_settings).test_client()
    subscribe(client, inbox, "ada", "ada@example.org", frequency="daily", max_items=50)
    assert send(mail_settings, NOW).sent == 1
    summary = send(mail_settings, NOW + DAY)
    assert summary.sent == 0 and summary.skipped["nothing new"] == 1
    assert len(inbox.messages) == 1


def test_a_digest_leaves_out_what_the_list_served_earlier_the_same_day(
    mail_settings: Settings, inbox: Inbox
) -> None:
    client = create_app(mail_settings).test_client()
    subscribe(client, inbox, "ada", "ada@example.org", frequency="daily", max_items=5)
    parts = wiring.build(mail_settings)
    # The list, ten minutes before (NOW is 53 minutes into its UTC day).
    morning = parts.recommender.recommend("ada", 5, now=NOW - 600)
    seen = {item.paper_id for item in morning.items}
    assert send(mail_settings, NOW).sent == 1
    served = dict(parts.feedback.served_with_times("ada"))
    mailed = {pid for pid, at in served.items() if at == NOW}
    assert len(mailed) == 5 and not mailed & seen  # the list's papers count for a digest
    assert all(served[pid] == NOW - 600 for pid in seen)  # when first served, kept


def test_dry_run_writes_eml_files_and_records_nothing(
    mail_settings: Settings, inbox: Inbox, tmp_path: Path
) -> None:
    client = create_app(mail_settings).test_client()
    subscribe(client, inbox, "ada", "ada@example.org")
    out = tmp_path / "outbox"
    assert send(mail_settings, NOW, dry_run_dir=out).sent == 1
    [eml] = out.glob("*.eml")
    assert b"List-Unsubscribe-Post: List-Unsubscribe=One-Click" in eml.read_bytes()
    assert inbox.messages == []
    assert send(mail_settings, NOW).sent == 1  # still due


def test_a_digest_leaves_out_muted_papers_and_puts_followed_ones_first(
    mail_settings: Settings, inbox: Inbox, like: Any, paper_ids_about: Any, ingest: Any,
    rebuild: Any, hashing_embedder: Any, tmp_path: Path,
) -> None:
    client = create_app(mail_settings).test_client()
    fed = paper_ids_about(mail_settings, "federated")[0]
    liked = client.get(f"/v1/papers/{fed}").json
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps({"id": "muller-fed", "title": liked["title"], "abstract": liked["abstract"],
                    "authors": ["Jürgen Müller"], "date": "2026-11-27"}) + "\n"
        + json.dumps({"id": "bengio-new", "title": "Protein folding kinetics in yeast",
                      "abstract": "Calorimetry of chaperones.", "authors": ["Yoshua Bengio"],
                      "date": "2026-11-20"}) + "\n")
    ingest(mail_settings, [extra])
    rebuild(mail_settings, embedder=hashing_embedder)
    for user in ("ada", "bob"):
        like(client, user, fed)
        subscribe(client, inbox, user, f"{user}@example.org", frequency="daily", max_items=3)
    for action, value in (("mute", "Jurgen Muller"), ("follow", "Yoshua Bengio")):
        response = client.put(f"/v1/users/ada/rules/{action}/author", json={"value": value})
        assert response.status_code == 200, response.json

    assert send(mail_settings, NOW).sent == 2
    signer = client.application.extensions["paperrec"].links

    def papers(address: str) -> list[str]:
        [message] = inbox.to(address)
        return [signer.verify(url.rsplit("/", 1)[1], NOW).paper_id
                for url in links(message)["More like this"]]

    assert papers("bob@example.org")[0] == "muller-fed"  # it would rank first
    assert "bengio-new" not in papers("bob@example.org")
    ada = papers("ada@example.org")
    assert ada[0] == "bengio-new" and "muller-fed" not in ada and len(ada) == 3
    text = inbox.to("ada@example.org")[0].get_body(("plain",)).get_content()  # type: ignore[union-attr]
    # Where it stands, then why (its first letter capitalised in the email).
    assert "Top match of your list · new from an author you follow: Yoshua Bengio" in " ".join(
        text.split())


def test_a_quiet_week_sends_nothing_and_the_summary_says_why(
    mail_settings: Settings, inbox: Inbox, like: Any, paper_ids_about: Any
) -> None:
    """A digest sends only papers at least ``min_probability`` likely to be worth reading:
    the same likes with a bar no paper reaches send no email, with one every paper reaches
    the full list, each item with where it stands on the list, in words."""
    client = create_app(mail_settings).test_client()
    for user in ("ada", "bob", "cy"):  # cy: the same list through the API
        for paper_id in paper_ids_about(mail_settings, "federated")[:3]:
            like(client, user, paper_id)
    subscribe(client, inbox, "ada", "ada@example.org", frequency="daily", max_items=5,
              min_probability=0.0)
    subscribe(client, inbox, "bob", "bob@example.org", frequency="daily", max_items=5,
              min_probability=1.0)
    assert client.get("/v1/users/bob/subscription").json["min_probability"] == 1.0

    summary = send(mail_settings, NOW)
    assert summary.sent == 1 and summary.skipped["nothing above min_probability"] == 1
    assert inbox.to("bob@example.org") == []
    [message] = inbox.to("ada@example.org")
    assert len(links(message)["More like this"]) == 5
    listed = client.get("/v1/users/cy/recommendations?k=5").json["items"]
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    words = " ".join(text.split())
    assert [item["rank"] for item in listed] == [1, 2, 3, 4, 5]
    assert listed[0]["standing"].startswith("top match of your list")
    assert all(item["standing"][1:] in words for item in listed)
    assert all(0 < item["probability"] < 1 for item in listed)
    assert "likely worth reading" not in words


def test_min_probability_cuts_the_list_where_the_probability_falls_below_it(
    mail_settings: Settings, like: Any, paper_ids_about: Any
) -> None:
    client = create_app(mail_settings).test_client()
    for user in ("ada", "bob"):  # each list is recorded as served: bob asks the second
        for paper_id in paper_ids_about(mail_settings, "federated")[:3]:
            like(client, user, paper_id)
    full = client.get("/v1/users/ada/recommendations?k=20").json["items"]
    chances = [item["probability"] for item in full]
    assert chances == sorted(chances, reverse=True) and chances[0] > chances[-1]
    bar = chances[len(chances) // 2]
    cut = client.get(f"/v1/users/bob/recommendations?k=20&min_probability={bar}").json["items"]
    assert [item["paper_id"] for item in cut] == [
        item["paper_id"] for item in full if item["probability"] >= bar]
    assert client.get("/v1/users/ada/recommendations?min_probability=1.5").status_code == 400


def test_a_new_subscriber_with_default_settings_gets_papers_with_authors_and_abstracts(
    mail_settings: Settings, inbox: Inbox, like: Any, paper_ids_about: Any, ingest: Any,
    rebuild: Any, hashing_embedder: Any, tmp_path: Path,
) -> None:
    """A reader with two likes on the sample corpus subscribes giving nothing but an address:
    the default bar sends papers (a bar of 0.1 sent nothing: items there stand at a few per
    cent), each with its authors, year and category, its standing and the abstract's first
    sentences."""
    client = create_app(mail_settings).test_client()
    fed = paper_ids_about(mail_settings, "federated")
    first = client.get(f"/v1/papers/{fed[0]}").json
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({
        "id": "arxiv:2611.01234", "title": "Federated learning with noisy labels, again",
        "abstract": first["abstract"], "date": "2026-11-27", "categories": ["cs.LG"],
        "authors": ["Jürgen Müller", "Ada Lovelace", "Grace Hopper", "Alan Turing"]}) + "\n")
    ingest(mail_settings, [extra])
    rebuild(mail_settings, embedder=hashing_embedder)
    for paper_id in fed[1:3]:
        for user in ("dee", "eve"):  # eve: the same list through the API
            like(client, user, paper_id)
    response = client.put("/v1/users/dee/subscription", json={"email": "dee@example.org"})
    assert response.status_code == 200 and response.json["min_probability"] == 0.0
    [confirmation] = inbox.to("dee@example.org")
    inbox.messages.remove(confirmation)
    confirm_address(client, confirmation)

    assert send(mail_settings, NOW).sent == 1
    [message] = inbox.to("dee@example.org")
    text = " ".join(message.get_body(("plain",)).get_content().split())  # type: ignore[union-attr]
    html = message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    listed = client.get("/v1/users/eve/recommendations?k=10").json["items"]
    signer = client.application.extensions["paperrec"].links
    sent = [signer.verify(url.rsplit("/", 1)[1], NOW).paper_id
            for url in links(message)["More like this"]]
    assert sent == [item["paper_id"] for item in listed]
    assert all(0 < item["probability"] < 0.1 for item in listed)  # the old bar: nothing
    assert "J. Müller, A. Lovelace, G. Hopper et al. · 2026 · Machine Learning (cs.LG)" in text
    assert "J. Müller, A. Lovelace, G. Hopper et al. &middot; 2026" in html
    assert "arXiv: https://arxiv.org/abs/2611.01234" in text
    corpus = client.application.extensions["paperrec"].corpus
    for paper_id in sent:
        lead = split_abstract(corpus.get(paper_id).abstract)[0]
        assert lead and lead in text
    assert "Top match of your list" in text and "likely worth reading" not in text
