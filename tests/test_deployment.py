"""docker-compose.yml, paperrec.env and the Dockerfile: no programs in YAML, every setting
declared once, images pinned, the mail catcher on loopback.

No Docker engine is needed: the compose file is read as YAML, and a real compose CLI (Debian's
docker-compose, which .ci/run installs; these tests are marked ``system``) renders it with
``config``. What the containers run are `paperrec` commands, tested where they live
(tests/test_operations.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from recommender.core.config import Settings
from service.cli.operations import env_file
from service.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_TEXT)
SERVICES: dict[str, Any] = COMPOSE["services"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
PAPERREC_SERVICES = ("init", "api", "jobs")
COMPOSE_VARIABLES = re.compile(r"\$\{([A-Z_]+)(?::-[^}]*)?\}")


def variables() -> set[str]:
    return {Settings.variable(name) for name in Settings.model_fields}


def test_no_service_runs_a_shell_script() -> None:
    for name, service in SERVICES.items():
        command = service.get("command", [])
        assert isinstance(command, list), f"{name}: a command is a list of words"
        assert not {"sh", "bash", "-c"} & set(command), f"{name} runs a shell"
        assert all("\n" not in word for word in command), f"{name}: a multi-line word"


def test_each_paperrec_service_runs_a_paperrec_command_that_exists() -> None:
    parser = build_parser()
    for name in PAPERREC_SERVICES:
        command = SERVICES[name]["command"]
        assert command[0] == "paperrec", name
        words = [COMPOSE_VARIABLES.sub("4", word) for word in command[1:]]
        parser.parse_args(words)  # exits (fails the test) on an unknown command or flag
    assert SERVICES["init"]["command"][1] == "init"
    assert SERVICES["jobs"]["command"][1:] == ["jobs"]
    assert SERVICES["api"]["command"][1] == "serve"


def test_the_api_and_the_jobs_start_once_init_has_finished() -> None:
    for name in ("api", "jobs"):
        assert SERVICES[name]["depends_on"]["init"] == {
            "condition": "service_completed_successfully"}, name
    assert SERVICES["init"]["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert SERVICES["init"]["restart"] == "no"


def test_every_setting_is_declared_once_in_the_env_file_made_from_the_settings() -> None:
    assert (ROOT / "paperrec.env").read_text() == env_file(), (
        "paperrec.env is out of date: run `paperrec settings --env-file > paperrec.env`")
    listed = set(re.findall(r"^# ([A-Z_]+)=", env_file(), re.M))
    assert listed == variables()
    for name in PAPERREC_SERVICES:
        service = SERVICES[name]
        assert service["env_file"] == "paperrec.env", name
        overridden = set(service["environment"])
        assert overridden <= variables(), f"{name} sets what is no setting"
        assert overridden == {"PAPERREC_DATA_DIR", "REDIS_URL", "PAPERREC_API_KEYS_FILE",
                              "SMTP_URL"}, "only what differs inside the containers"


def test_images_are_pinned_to_versions() -> None:
    for name, service in SERVICES.items():
        image = service["image"]
        if image == "paperrec:local":
            assert service["build"] == ".", name
            continue
        tag = image.rpartition(":")[2]
        assert ":" in image and re.fullmatch(r"v?\d+\.\d+\.\d+", tag), f"{name}: {image}"


def test_the_api_and_the_mail_catcher_publish_on_loopback_by_default() -> None:
    for name in ("api", "mailpit"):
        for port in SERVICES[name]["ports"]:
            assert re.match(r"\$\{PAPERREC_[A-Z_]+:-127\.0\.0\.1\}:", port), port
    api_bind = SERVICES["api"]["ports"][0].split("}")[0]
    mail_bind = SERVICES["mailpit"]["ports"][0].split("}")[0]
    assert api_bind != mail_bind, "publishing the API must not publish the sign-in links"


def test_redis_persists_every_write_before_answering() -> None:
    redis = SERVICES["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command and "--appendfsync always" in command
    assert "--maxmemory-policy noeviction" in command
    assert redis["volumes"][0].split(":")[0] in COMPOSE["volumes"]


def test_healthchecks_need_no_curl() -> None:
    for name in ("redis", "api"):
        assert SERVICES[name]["healthcheck"]["test"][0] == "CMD", name
    test = SERVICES["api"]["healthcheck"]["test"]
    assert test[1:3] == ["python", "-c"]  # python:3.11-slim has no curl
    compile(test[3], "healthcheck", "exec")
    assert "http://127.0.0.1:8000/healthz" in test[3]


def test_the_dockerfile_installs_the_torch_pyproject_pins_for_the_cpu() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "dependencies"]
    assert [d for d in dependencies if d.startswith("torch")] == ["torch==2.13.0"]
    assert "download.pytorch.org/whl/cpu" in DOCKERFILE
    assert "2.13" not in DOCKERFILE and "2.13" not in (ROOT / "Makefile").read_text(), (
        "the torch version is declared once, in pyproject.toml")
    assert "HF_HUB_OFFLINE=1" in DOCKERFILE and "EXPOSE 8000" in DOCKERFILE


# --- a real compose CLI -------------------------------------------------------------------------

def compose_cli() -> list[str]:
    """Compose v2 (`docker compose`) or Debian's docker-compose; .ci/run installs the latter.
    Its absence fails the test: `make test-fast` leaves the `system` tests out."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"],
                                                 capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail("no compose CLI (`docker compose` or `docker-compose`): .ci/run installs "
                "Debian's docker-compose")


def rendered(**environment: str) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("PAPERREC_", "COMPOSE_")) and k not in variables()}
    result = subprocess.run([*compose_cli(), "-f", "docker-compose.yml", "config"], cwd=ROOT,
                            capture_output=True, text=True, env={**clean, **environment})
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def published(service: dict[str, Any]) -> list[str]:
    """host_ip:published of each port, in either CLI's rendering."""
    found = []
    for port in service["ports"]:
        if isinstance(port, dict):
            found.append(f"{port.get('host_ip', '')}:{port['published']}")
        else:
            host, published_port, _ = str(port).rsplit(":", 2)
            found.append(f"{host}:{published_port}")
    return found


@pytest.mark.system
def test_compose_renders_the_file_with_its_defaults() -> None:
    services = rendered()["services"]
    assert published(services["api"]) == ["127.0.0.1:8000"]
    assert published(services["mailpit"]) == ["127.0.0.1:8025"]
    api = services["api"]
    assert api["environment"]["PAPERREC_DATA_DIR"] == "/data"
    assert "--workers" in api["command"] and "4" in api["command"]


@pytest.mark.system
def test_publishing_the_api_leaves_the_mail_catcher_on_loopback() -> None:
    services = rendered(PAPERREC_HTTP_BIND="0.0.0.0")["services"]
    assert published(services["api"]) == ["0.0.0.0:8000"]
    assert published(services["mailpit"]) == ["127.0.0.1:8025"]


@pytest.mark.system
def test_a_setting_in_paperrec_env_reaches_every_paperrec_service(tmp_path: Path) -> None:
    project = tmp_path / "deploy"
    project.mkdir()
    shutil.copy(ROOT / "docker-compose.yml", project)
    (project / "paperrec.env").write_text(env_file().replace(
        "# PAPERREC_ARXIV_CATEGORIES=", "PAPERREC_ARXIV_CATEGORIES=cs.LG"))
    result = subprocess.run([*compose_cli(), "-f", "docker-compose.yml", "config"],
                            cwd=project, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    for name in PAPERREC_SERVICES:
        assert services[name]["environment"]["PAPERREC_ARXIV_CATEGORIES"] == "cs.LG", name
