"""A user's own data: export everything, erase everything."""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from recommender.core.config import Settings


def test_export_holds_everything_and_erase_removes_it(
    app: Flask, sample_settings: Settings, like: Callable[..., None],
    paper_ids_about: Callable[[Settings, str], list[str]],
) -> None:
    client = app.test_client()
    fed = paper_ids_about(sample_settings, "federated")
    like(client, "ada", fed[0])
    like(client, "ada", fed[1], "dislike")
    like(client, "bob", fed[0])
    client.put("/v1/users/ada/subscription", json={"email": "ada@example.org"})
    served = [i["paper_id"] for i in client.get("/v1/users/ada/recommendations?k=3").json["items"]]
    app.extensions["paperrec"].subscriptions.record_digest("ada", "2026-W49", 1.5, "<m@x>")

    export = client.get("/v1/users/ada/export").json
    assert [(f["paper_id"], f["signal"]) for f in export["feedback"]] == [
        (fed[0], "like"), (fed[1], "dislike")]
    assert sorted(s["paper_id"] for s in export["served"]) == sorted(served)
    assert export["subscription"]["email"] == "ada@example.org"
    assert export["digests"] == [{"period": "2026-W49", "at": 1.5, "message_id": "<m@x>"}]

    assert client.delete("/v1/users/ada").status_code == 204
    assert client.get("/v1/users/ada/export").json == {
        "user_id": "ada", "feedback": [], "served": [], "set_aside": [], "subscription": None,
        "digests": [], "rules": [], "collections": [], "feed": None, "uploads": [],
        "zotero": None}
    feedback = app.extensions["paperrec"].feedback
    assert feedback.like_counts() == {fed[0]: 1}  # bob's like stays, ada's is gone
    assert "ada" not in set(feedback.users())
    assert [f["paper_id"] for f in client.get("/v1/users/bob/feedback").json["items"]] == [fed[0]]
