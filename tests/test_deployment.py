"""docker-compose.yml, the Dockerfile and the README's Deployment section tell the same story.

No Docker engine is needed: the compose file is read as YAML (with its ${NAME:-default}
defaults), its shell scripts are run with a stand-in `paperrec`, and a compose CLI (`make test`
installs one) validates the file with `config -q`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from recommender.core.config import Settings
from service.auth import ApiKeys
from service.cli import main as paperrec_main

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
README = (ROOT / "README.md").read_text()
DOCKERFILE = (ROOT / "Dockerfile").read_text()
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}")


# --- reading the files ----------------------------------------------------------------------

def interpolate(text: str) -> str:
    """What compose makes of the file with an empty environment: every ${NAME:-default} is
    its default, and $$ (a literal $ for the container's shell) is $."""
    text = text.replace("$$", "\0")
    text = VARIABLE.sub(lambda m: m.group(3) or "", text)
    return text.replace("\0", "$")


def compose_defaults() -> dict[str, str]:
    defaults: dict[str, str] = {}
    lines = [line for line in COMPOSE_TEXT.splitlines() if not line.lstrip().startswith("#")]
    for match in VARIABLE.finditer("\n".join(lines).replace("$$", "")):
        name, default = match.group(1), match.group(3) or ""
        assert defaults.setdefault(name, default) == default, f"two defaults for {name}"
    return defaults


COMPOSE: dict[str, Any] = yaml.safe_load(interpolate(COMPOSE_TEXT))
SERVICES: dict[str, Any] = COMPOSE["services"]


def section(text: str, heading: str) -> str:
    start = text.find(f"\n{heading}\n")
    assert start >= 0, f"README.md has no {heading!r} section"
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


DEPLOYMENT = section(README, "## Deployment")
CONFIGURATION = section(README, "## Configuration")


def table(text: str, first_column: str) -> list[list[str]]:
    """The rows of the markdown table whose header starts with `first_column`."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_column:
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            assert rows, f"the table with a {first_column!r} column has no rows"
            return rows
    raise AssertionError(f"no table with a {first_column!r} column")


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def script(service: str) -> str:
    """The shell script a service runs (`sh -c SCRIPT`), or its command as one line."""
    command = SERVICES[service]["command"]
    if isinstance(command, str):
        command = shlex.split(command)
    if command[:2] == ["sh", "-c"]:
        return str(command[2])
    return shlex.join(command)


def environment(service: str) -> dict[str, str]:
    env = SERVICES[service].get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def published_ports(service: str) -> list[str]:
    """host_ip:host_port of each published port (short syntax)."""
    ports = []
    for entry in SERVICES[service].get("ports", []):
        parts = str(entry).split(":")
        assert len(parts) == 3, f"{service}: publish {entry} on an explicit host address"
        ports.append(f"{parts[0]}:{parts[1]}")
    return ports


def data_dir_mount(service: str) -> str:
    """The volume a service mounts at its data dir."""
    data_dir = environment(service)["PAPERREC_DATA_DIR"]
    for volume in SERVICES[service]["volumes"]:
        source, target = str(volume).split(":")[:2]
        if target == data_dir:
            return source
    raise AssertionError(f"{service} mounts nothing at {data_dir}")


def paperrec_calls(text: str) -> list[tuple[str, list[str]]]:
    """(subcommand, --flags) of every `paperrec SUBCOMMAND ...` in the text (`fetch SOURCE`
    is one subcommand)."""
    calls = []
    for match in re.finditer(r"\bpaperrec (fetch [a-z]+|[a-z][a-z-]*)([^\n;&|`)]*)", text):
        calls.append((match.group(1), re.findall(r"(?<!\S)(--[a-z][a-z-]*)", match.group(2))))
    return calls


def code(markdown: str) -> str:
    """The fenced blocks and inline code spans of a markdown text."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", markdown, re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M))
    return "\n".join(blocks + spans)


def cli_help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """`paperrec ARGS --help`, as a user reads it."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        paperrec_main([*args, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


# --- the compose file against the README ----------------------------------------------------

def test_readme_lists_every_service_with_its_published_ports() -> None:
    rows = table(DEPLOYMENT, "service")
    documented = {code_spans(row[0])[0]: row for row in rows}
    assert set(documented) == set(SERVICES)
    for name, row in documented.items():
        ports_in_readme = [s for s in code_spans(row[2]) if re.fullmatch(r"[\d.]+:\d+", s)]
        assert ports_in_readme == published_ports(name), f"{name}: ports in README vs compose"
        image = SERVICES[name].get("image")
        assert image and f"`{image}`" in row[1], f"{name}: image {image} in the README"


def settings_variables() -> set[str]:
    """Every environment variable the settings declare (Settings.from_env reads)."""
    return {Settings.variable(name) for name in Settings.model_fields}


def test_readme_variables_are_the_compose_defaults() -> None:
    rows = table(DEPLOYMENT, "variable")
    documented = {code_spans(row[0])[0]: row[1] for row in rows}
    defaults = compose_defaults()
    assert set(documented) <= set(defaults), "README variables that compose does not read"
    for name in set(defaults) - set(documented):  # the rest pass through unchanged
        assert defaults[name] == "" and name in settings_variables(), (
            f"{name}: a compose default of its own, {defaults[name]!r}, that the README's "
            f"Deployment table omits")
    for name, cell in documented.items():
        spans = code_spans(cell)
        said = spans[0] if spans and not cell.startswith("*") else ""
        assert defaults[name] == said, f"{name}: compose {defaults[name]!r}, README {said!r}"


def test_every_deployment_variable_is_used() -> None:
    """Each variable is declared by the settings, read by the script of a service that has it
    in its environment, or read by the compose file itself (ports)."""
    raw = yaml.safe_load(COMPOSE_TEXT.replace("$$", "_"))["services"]
    outside_environment = str([{k: v for k, v in service.items() if k != "environment"}
                               for service in raw.values()])
    for row in table(DEPLOYMENT, "variable"):
        name = code_spans(row[0])[0]
        in_scripts = [service for service in SERVICES if "command" in SERVICES[service]
                      and re.search(rf"\${{?{name}\b", script(service))]
        for service in in_scripts:
            assert name in environment(service), f"{service} uses {name} but is not given it"
        used = name in settings_variables() or in_scripts or f"${{{name}" in outside_environment
        assert used, f"{name} is documented but nothing reads it"


def test_every_setting_reaches_the_api_and_the_jobs() -> None:
    for service in ("api", "jobs"):
        missing = settings_variables() - set(environment(service))
        assert not missing, f"compose does not pass {sorted(missing)} to {service}"


def test_every_variable_compose_sets_is_documented() -> None:
    documented = {code_spans(row[0])[0] for row in table(DEPLOYMENT, "variable")}
    documented |= {code_spans(row[0])[0] for row in table(CONFIGURATION, "variable")}
    for name in SERVICES:
        for variable in environment(name):
            assert variable in documented, (
                f"{name} sets {variable}, which neither the Configuration nor the Deployment "
                f"table of the README describes")
    for fixed in ("PAPERREC_DATA_DIR", "REDIS_URL"):
        value = environment("api")[fixed]
        assert f"`{fixed}={value}`" in DEPLOYMENT


def test_redis_persists_every_write_before_answering() -> None:
    redis = SERVICES["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command
    assert "--appendfsync always" in command
    assert "--maxmemory-policy noeviction" in command
    assert "healthcheck" in redis
    source = str(redis["volumes"][0]).split(":")[0]
    assert source in COMPOSE["volumes"], "redis data on a named volume"
    assert "appendfsync always" in DEPLOYMENT
    assert environment("api")["REDIS_URL"].startswith("redis://redis:6379")


def test_api_serves_with_gunicorn_workers_on_all_interfaces() -> None:
    api = script("api")
    serve = re.search(r"exec paperrec serve (.*)", api)
    assert serve, "the api execs `paperrec serve` (gunicorn gets the signals)"
    args = shlex.split(serve.group(1))
    assert args[args.index("--host") + 1] == "0.0.0.0"
    port = args[args.index("--port") + 1]
    assert all(p.endswith(f":{port}") for p in SERVICES["api"]["ports"])
    workers = args[args.index("--workers") + 1]
    if workers.startswith("$"):
        workers = environment("api")[workers.strip("${}")]
    assert int(workers) >= 2
    assert f"--workers {workers}" in DEPLOYMENT


def test_healthchecks_need_no_curl() -> None:
    for name in ("redis", "api"):
        assert SERVICES[name]["healthcheck"]["test"][0] == "CMD", name
    test = SERVICES["api"]["healthcheck"]["test"]
    assert test[1:3] == ["python", "-c"]  # python:3.11-slim has no curl
    compile(test[3], "healthcheck", "exec")
    port = re.search(r"--port (\d+)", script("api"))
    assert port and re.search(rf"http://127\.0\.0\.1:{port.group(1)}/(healthz|readyz)", test[3])
    assert "curl" not in DOCKERFILE.split("HEALTHCHECK", 1)[1]
    assert "healthcheck on `/healthz`" in DEPLOYMENT


def test_api_keys_are_configured() -> None:
    env = environment("api")
    assert env.get("PAPERREC_API_KEYS") or env.get("PAPERREC_API_KEYS_FILE")
    assert 'secrets.token_urlsafe(32)' in DEPLOYMENT
    assert "client" in DEPLOYMENT and "admin" in DEPLOYMENT


def test_api_and_jobs_share_the_data_volume() -> None:
    assert data_dir_mount("api") == data_dir_mount("jobs")
    assert data_dir_mount("api") in COMPOSE["volumes"]
    assert environment("api")["PAPERREC_DATA_DIR"] == environment("jobs")["PAPERREC_DATA_DIR"]
    assert SERVICES["jobs"]["depends_on"]["api"]["condition"] == "service_healthy"


def test_jobs_rebuild_train_and_send_digests(capsys: pytest.CaptureFixture[str]) -> None:
    calls = paperrec_calls(script("jobs"))
    called = [sub for sub, _flags in calls]
    assert called == ["fetch arxiv", "rebuild-index", "train", "digest"]
    # Each step after the fetch publishes nothing when the one before found nothing new.
    assert all("--if-changed" in flags for sub, flags in calls if sub in ("rebuild-index",
                                                                          "train"))
    overview = cli_help(capsys)
    for sub in called:
        first = sub.split()[0]
        assert re.search(rf"^\s+{first}\b", overview, re.M), f"`paperrec --help` lacks {first}"


def test_every_paperrec_command_and_flag_exists(capsys: pytest.CaptureFixture[str]) -> None:
    """In the compose scripts and in the README's Deployment section."""
    calls = paperrec_calls(code(DEPLOYMENT))
    for name in SERVICES:
        if "command" in SERVICES[name]:
            calls += paperrec_calls(script(name))
    assert len(calls) > 10
    helps: dict[str, str] = {}
    for sub, flags in calls:
        if sub not in helps:
            helps[sub] = cli_help(capsys, *sub.split())
        for flag in flags:
            assert flag in helps[sub], f"`paperrec {sub}` has no {flag}"


# --- the scripts, run with a stand-in paperrec ------------------------------------------------

STAND_IN = """#!/bin/sh
echo "$*|keys_file=${PAPERREC_API_KEYS_FILE-unset}" >> "$CALLS"
case "$1" in
  ingest) touch "$PAPERREC_DATA_DIR/corpus.sqlite" ;;
  rebuild-index) mkdir -p "$PAPERREC_DATA_DIR/index" && touch "$PAPERREC_DATA_DIR/index/CURRENT" ;;
  train) exit 1 ;;
esac
"""


def run_script(service: str, tmp_path: Path, **overrides: str) -> tuple[subprocess.Popen[str],
                                                                         Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stand_in = bin_dir / "paperrec"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IEXEC)
    python = bin_dir / "python"
    if not python.exists():
        python.symlink_to(sys.executable)
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    calls = tmp_path / "calls"
    env = environment(service) | {
        "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls),
        "PAPERREC_DATA_DIR": str(data), "PAPERREC_API_KEYS_FILE": str(data / "api-keys"),
    } | overrides
    process = subprocess.Popen(["sh", "-c", script(service)], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return process, calls


def api_start(tmp_path: Path, **overrides: str) -> list[str]:
    process, calls = run_script("api", tmp_path, **overrides)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    lines = calls.read_text().splitlines()
    calls.unlink()
    return lines


def test_api_first_start_makes_keys_secret_and_sample_index(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys_file = data / "api-keys"
    first = api_start(tmp_path)
    assert [line.split("|")[0] for line in first] == [
        "ingest --sample", "rebuild-index --quiet", "serve --host 0.0.0.0 --port 8000 --workers 4"]
    keys = ApiKeys.parse("", str(keys_file))
    assert sorted(role for _digest, role in keys.digests) == ["admin", "client"]
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    secret = (data / "secret.key").read_text().strip()
    assert len(secret) >= 32 and stat.S_IMODE((data / "secret.key").stat().st_mode) == 0o600

    again = api_start(tmp_path)  # a restart: nothing is made or built again
    assert [line.split("|")[0] for line in again] == [
        "serve --host 0.0.0.0 --port 8000 --workers 4"]
    assert ApiKeys.parse("", str(keys_file)) == keys
    assert (data / "secret.key").read_text().strip() == secret


def test_api_with_inline_keys_and_no_sample(tmp_path: Path) -> None:
    lines = api_start(tmp_path, PAPERREC_API_KEYS="client:" + "k" * 20,
                      PAPERREC_LOAD_SAMPLE="0", PAPERREC_SECRET_KEY="s" * 32)
    assert lines == ["serve --host 0.0.0.0 --port 8000 --workers 4|keys_file=unset"]
    assert not (tmp_path / "data" / "api-keys").exists()
    assert not (tmp_path / "data" / "secret.key").exists()


def jobs_steps(tmp_path: Path, count: int, **overrides: str) -> tuple[int | None, list[str]]:
    """The jobs loop with a stand-in paperrec, stopped by SIGTERM after ``count`` calls: its
    exit status and the calls it made."""
    process, calls = run_script("jobs", tmp_path, PAPERREC_JOBS_INTERVAL_SECONDS="0.2",
                                **overrides)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
                not calls.exists() or len(calls.read_text().splitlines()) < count):
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, [line.split("|")[0] for line in calls.read_text().splitlines()]


def test_jobs_loop_goes_on_after_a_failed_step_and_stops_on_sigterm(tmp_path: Path) -> None:
    status, steps = jobs_steps(tmp_path, 8, PAPERREC_ARXIV_CATEGORIES="cs.LG")
    assert status == 0
    assert steps[:8] == ["fetch arxiv --quiet", "rebuild-index --quiet --if-changed",
                         "train --quiet --if-changed", "digest --quiet"] * 2


def test_jobs_fetch_nothing_when_no_arxiv_category_is_set(tmp_path: Path) -> None:
    _, steps = jobs_steps(tmp_path, 3, PAPERREC_ARXIV_CATEGORIES="")
    assert steps[:3] == ["rebuild-index --quiet --if-changed", "train --quiet --if-changed",
                         "digest --quiet"]


# --- the image ------------------------------------------------------------------------------

def test_dockerfile_installs_pinned_cpu_torch_and_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    torch_pin = next(d for d in pyproject["project"]["dependencies"] if d.startswith("torch"))
    cpu_index = r"--index-url https://download\.pytorch\.org/whl/cpu"
    assert re.search(rf"{cpu_index} {re.escape(torch_pin)}\b", DOCKERFILE)
    assert torch_pin == "torch==2.13.0"
    version = pyproject["project"]["requires-python"].lstrip(">=~")
    assert re.search(rf"^FROM python:{re.escape(version)}-slim$", DOCKERFILE, re.M)
    copied = set(re.findall(r"^COPY (.+?) \S+$", DOCKERFILE, re.M))
    copied = {path for line in copied for path in line.split()}
    assert {"pyproject.toml", pyproject["project"]["readme"]} <= copied
    for package in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]:
        assert package.rstrip("*") in copied, f"the image lacks the {package} package"
    assert "PAPERREC_DATA_DIR=/data" in DOCKERFILE
    assert environment("api")["PAPERREC_DATA_DIR"] == "/data"
    assert "HF_HUB_OFFLINE=1" in DOCKERFILE
    assert "EXPOSE 8000" in DOCKERFILE


# --- a compose CLI, when there is one ---------------------------------------------------------

def compose_cli() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def clean_environment() -> dict[str, str]:
    """Without our variables, so compose checks the file's own defaults."""
    return {k: v for k, v in os.environ.items()
            if k not in compose_defaults() and not k.startswith("COMPOSE_")}


def required_compose_cli() -> list[str]:
    """The compose CLI; its absence fails the test (`make test` installs one first)."""
    cli = compose_cli()
    if cli is None:
        pytest.fail("no compose CLI (`docker compose` or `docker-compose`); `make compose-cli` "
                    "installs Debian's docker-compose")
    return cli


def test_compose_cli_validates_the_file() -> None:
    cli = required_compose_cli()
    result = subprocess.run([*cli, "-f", "docker-compose.yml", "config", "-q"], cwd=ROOT,
                            capture_output=True, text=True, env=clean_environment())
    assert result.returncode == 0, result.stderr


def test_compose_cli_accepts_the_readme_keys_file_override(tmp_path: Path) -> None:
    cli = required_compose_cli()
    override = re.search(r"```yaml\n(services:.*?)```", DEPLOYMENT, re.S)
    assert override, "the README shows a docker-compose.override.yml"
    (tmp_path / "docker-compose.override.yml").write_text(override.group(1))
    result = subprocess.run(
        [*cli, "-f", str(ROOT / "docker-compose.yml"), "-f",
         str(tmp_path / "docker-compose.override.yml"), "config"],
        cwd=ROOT, capture_output=True, text=True, env=clean_environment())
    assert result.returncode == 0, result.stderr
    merged = yaml.safe_load(result.stdout)
    assert merged["services"]["api"]["environment"]["PAPERREC_API_KEYS_FILE"] == (
        "/run/paperrec/api-keys")
