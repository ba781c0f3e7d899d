"""API keys and roles."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from service.auth import ApiKeys
from service.cli import main
from service.rate_limit import Limit

MakeApp = Callable[[Settings], Flask]
CLIENT_KEY = "client-key-0123456789"
ADMIN_KEY = "admin-key-0123456789ab"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def client(sample_settings: Settings, make_app: MakeApp) -> FlaskClient:
    """The service with a client key and an admin key."""
    keyed = sample_settings.replace(api_keys=f"client:{CLIENT_KEY},admin:{ADMIN_KEY}")
    return make_app(keyed).test_client()


def test_no_key_is_401_and_a_wrong_key_too(client: FlaskClient) -> None:
    response = client.get("/v1/users/ada/feedback")
    assert response.status_code == 401 and "Bearer" in response.json["error"]["message"]
    assert client.get("/v1/users/ada/feedback",
                      headers=bearer("not-a-key-at-all")).status_code == 401


def test_health_and_email_links_stay_open(client: FlaskClient) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    link = client.get("/v1/links/forged.token")  # checked by its signature, not by a key
    assert link.status_code == 403 and "Nothing was recorded" in link.text
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/docs").status_code == 200


def test_roles(client: FlaskClient) -> None:
    assert client.get("/v1/users/ada/feedback", headers=bearer(CLIENT_KEY)).status_code == 200
    assert client.get("/v1/users/ada/export", headers=bearer(CLIENT_KEY)).status_code == 403
    assert client.delete("/v1/users/ada", headers=bearer(CLIENT_KEY)).status_code == 403
    assert client.get("/v1/users/ada/export", headers=bearer(ADMIN_KEY)).status_code == 200
    assert client.delete("/v1/users/ada", headers=bearer(ADMIN_KEY)).status_code == 204


def test_bad_key_configuration_is_refused() -> None:
    with pytest.raises(InvalidInput, match="role:key"):
        ApiKeys.parse("root:0123456789abcdef", "")
    with pytest.raises(InvalidInput, match="at least 16"):
        ApiKeys.parse("client:short", "")


def test_serve_refuses_a_public_address_without_keys(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PAPERREC_API_KEYS", raising=False)
    monkeypatch.delenv("PAPERREC_API_KEYS_FILE", raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "refusing to listen on 0.0.0.0 without API keys" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "limit"), [
    ("600/minute", Limit(600, 60)), ("5 / second", Limit(5, 1)), ("off", None), ("0", None)])
def test_rate_limits_are_written_as_requests_per_window(text: str, limit: Limit | None) -> None:
    assert Limit.parse(text) == limit


@pytest.mark.parametrize("text", ["600", "600/day", "-1/minute", "lots"])
def test_a_bad_rate_limit_says_what_it_should_look_like(text: str) -> None:
    with pytest.raises(InvalidInput, match="600/minute"):
        Limit.parse(text)


def test_each_key_has_its_own_limit_shared_by_every_worker(
    sample_settings: Settings, make_app: MakeApp
) -> None:
    limited = sample_settings.replace(rate_limit="3/minute",
                                  api_keys=f"client:{CLIENT_KEY},admin:{ADMIN_KEY}")
    workers = [make_app(limited).test_client() for _ in range(2)]  # counted in one Redis
    seen = []
    for turn in range(4):
        response = workers[turn % 2].get("/v1/users/ada/feedback", headers=bearer(CLIENT_KEY))
        seen.append((response.status_code, response.headers.get("X-RateLimit-Remaining")))
    assert seen[:3] == [(200, "2"), (200, "1"), (200, "0")]
    refused = workers[0].get("/v1/users/ada/feedback", headers=bearer(CLIENT_KEY))
    assert seen[3][0] == 429 and refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "3/minute" in refused.json["error"]["message"]
    other = workers[1].get("/v1/users/ada/feedback", headers=bearer(ADMIN_KEY))
    assert other.status_code == 200 and other.headers["X-RateLimit-Remaining"] == "2"
    assert workers[0].get("/healthz").status_code == 200  # open endpoints are not counted


def test_the_limit_lets_requests_through_when_redis_is_down(
    sample_settings: Settings, unreachable_redis_url: str, make_app: MakeApp
) -> None:
    down = sample_settings.replace(redis_url=unreachable_redis_url,
                               rate_limit="1/minute", api_keys=f"client:{CLIENT_KEY}")
    client = make_app(down).test_client()
    for _ in range(3):  # search needs no Redis, so it keeps working, unlimited
        assert client.get("/v1/search?q=federated", headers=bearer(CLIENT_KEY)).status_code == 200
