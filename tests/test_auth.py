"""API keys and roles."""

from __future__ import annotations

import dataclasses

import pytest

from recommender.config import Settings
from service import create_app
from service.cli import main

pytestmark = pytest.mark.model
CLIENT_KEY = "client-key-0123456789"
ADMIN_KEY = "admin-key-0123456789ab"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def client(sample_settings: Settings):  # type: ignore[no-untyped-def]
    keyed = dataclasses.replace(sample_settings,
                                api_keys=f"client:{CLIENT_KEY},admin:{ADMIN_KEY}")
    return create_app(keyed).test_client()


def test_no_key_is_401_and_a_wrong_key_too(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/v1/users/ada/feedback")
    assert response.status_code == 401 and "Bearer" in response.json["error"]["message"]
    assert client.get("/v1/users/ada/feedback",
                      headers=bearer("not-a-key-at-all")).status_code == 401


def test_health_and_email_links_stay_open(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get("/v1/links/forged.token").status_code == 400  # checked, not refused


def test_roles(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/v1/users/ada/feedback", headers=bearer(CLIENT_KEY)).status_code == 200
    assert client.get("/v1/users/ada/export", headers=bearer(CLIENT_KEY)).status_code == 403
    assert client.delete("/v1/users/ada", headers=bearer(CLIENT_KEY)).status_code == 403
    assert client.get("/v1/users/ada/export", headers=bearer(ADMIN_KEY)).status_code == 200
    assert client.delete("/v1/users/ada", headers=bearer(ADMIN_KEY)).status_code == 204


def test_bad_key_configuration_is_refused() -> None:
    from recommender.errors import InvalidInput
    from service.auth import ApiKeys

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
