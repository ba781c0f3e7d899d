"""Settings: each declared once, checked by its rule with a message naming its variable, and
described the same way by the declarations, `paperrec --help` and the documentation."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recommender.core.config import Settings
from recommender.core.errors import InvalidInput
from recommender.embedding.encoders import check_backend
from replay.server import free_port
from service.auth import ApiKeys
from service.cli import main
from service.cli.parser import DEFAULT_PORT
from service.rate_limit import Limit
from tests.test_docs import code_spans, load_gen_pages, table

PAPERREC = Path(sys.executable).with_name("paperrec")
VARIABLES = {name: Settings.variable(name) for name in Settings.model_fields}
# Configuration rows that are not settings of the library, with their defaults.
NOT_SETTINGS = {
    "PORT": str(DEFAULT_PORT),  # read by `paperrec serve` and `make run`
}
# Read by the tests only (tests/conftest.py), and documented with them.
TEST_VARIABLES = {"PAPERREC_TEST_REDIS_URL": "redis://127.0.0.1:6379/0"}
DOCS = Path(__file__).resolve().parents[1] / "docs"
SHORT_KEY = "k" * 14
GOOD_KEY = "k" * 16


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment with no setting of its own: each test sets what it means."""
    for variable in VARIABLES.values():
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


# --- reading the environment ------------------------------------------------------------------

def test_every_setting_is_read_from_its_variable(environment: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    given = {
        "PAPERREC_DATA_DIR": str(tmp_path), "REDIS_URL": "redis://127.0.0.1:6379/3",
        "PAPERREC_REDIS_NAMESPACE": "ns", "PAPERREC_MODEL": "/models/specter",
        "PAPERREC_EMBED_BATCH_SIZE": "8", "PAPERREC_EMBED_BACKEND": "torch",
        "PAPERREC_INDEX_CHECK_SECONDS": "0.5", "PAPERREC_EXACT_INDEX_MAX": "100",
        "PAPERREC_SECRET_KEY": "s" * 32, "PAPERREC_PUBLIC_URL": "https://papers.example.org/",
        "SMTP_URL": "smtps://mail.example.org:465", "PAPERREC_MAIL_FROM": "me <me@example.org>",
        "PAPERREC_MAIL_DIR": "/srv/mail", "PAPERREC_API_KEYS": f"admin:{GOOD_KEY}",
        "PAPERREC_API_KEYS_FILE": str(keys_file),
        "PAPERREC_RATE_LIMIT": "5/second", "PAPERREC_ARXIV_OAI_URL": "http://127.0.0.1:1/oai",
        "PAPERREC_ARXIV_DELAY_SECONDS": "0", "PAPERREC_ARXIV_RETRIES": "2",
        "PAPERREC_ARXIV_CATEGORIES": "cs.LG,stat.ML",
        "PAPERREC_OPENREVIEW_URL": "http://127.0.0.1:1/", "PAPERREC_OPENREVIEW_DELAY_SECONDS": "0",
        "PAPERREC_OPENREVIEW_RETRIES": "1",
        "PAPERREC_EMBED_CLUSTER": "tcp://scheduler:8786", "PAPERREC_EMBED_CLUSTER_TIMEOUT": "3",
        "PAPERREC_EMBED_SHARD_SIZE": "100", "PAPERREC_SERVED_HISTORY_MAX": "50",
        "PAPERREC_REDIS_WAIT_REPLICAS": "2", "PAPERREC_REDIS_WAIT_MS": "250",
        "PAPERREC_EMBED_PROCESSES": "3", "PAPERREC_JOBS_INTERVAL_SECONDS": "60",
        "PAPERREC_TRUSTED_PROXIES": "1", "PAPERREC_UPLOADS_PER_DAY": "5",
        "PAPERREC_ADMIN_EMAILS": "ops@example.org",
        "PAPERREC_ZOTERO_API_URL": "http://127.0.0.1:2/", "PAPERREC_ZOTERO_BUDGET_SECONDS": "5",
        "PAPERREC_ZOTERO_RETRIES": "0", "PAPERREC_EVENTS_STREAM_MAX": "5000",
        "PAPERREC_EVENTS_PER_READER_DAY": "50",
        "PAPERREC_RANKING_VARIANTS": "spread: diversity=0.5",
        "PAPERREC_ONLINE_FIGURES_SECONDS": "60",
    }
    assert set(given) == set(VARIABLES.values())
    for variable, value in given.items():
        environment.setenv(variable, value)
    settings = Settings.from_env()
    assert settings == Settings(
        data_dir=tmp_path, redis_url="redis://127.0.0.1:6379/3", redis_namespace="ns",
        model="/models/specter", embed_batch_size=8, embed_backend="torch",
        index_check_seconds=0.5, exact_index_max=100, secret_key="s" * 32,
        public_url="https://papers.example.org", smtp_url="smtps://mail.example.org:465",
        mail_from="me <me@example.org>", mail_dir="/srv/mail", api_keys=f"admin:{GOOD_KEY}",
        api_keys_file=str(keys_file), rate_limit="5/second",
        arxiv_oai_url="http://127.0.0.1:1/oai", arxiv_delay_seconds=0, arxiv_retries=2,
        arxiv_categories="cs.LG,stat.ML", openreview_url="http://127.0.0.1:1",
        openreview_delay_seconds=0, openreview_retries=1,
        embed_cluster="tcp://scheduler:8786",
        embed_cluster_timeout=3, embed_shard_size=100, served_history_max=50,
        redis_wait_replicas=2, redis_wait_ms=250,
        embed_processes=3, jobs_interval_seconds=60, trusted_proxies=1, uploads_per_day=5,
        admin_emails="ops@example.org", zotero_api_url="http://127.0.0.1:2",
        zotero_budget_seconds=5, zotero_retries=0, events_stream_max=5000,
        events_per_reader_day=50,
        ranking_variants="spread: diversity=0.5", online_figures_seconds=60)
    assert settings.public_url == "https://papers.example.org"  # no trailing /
    assert settings.corpus_path == tmp_path / "corpus.sqlite"


def test_an_empty_variable_means_the_default(environment: pytest.MonkeyPatch) -> None:
    for variable in VARIABLES.values():
        environment.setenv(variable, "")
    assert Settings.from_env() == Settings()
    assert Settings().model == "all-MiniLM-L6-v2" and Settings().data_dir == Path("var")


def test_overrides_win_over_the_environment(environment: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    environment.setenv("PAPERREC_DATA_DIR", "/elsewhere")
    environment.setenv("PAPERREC_MODEL", "/models/specter")
    settings = Settings.from_env(data_dir=tmp_path)
    assert (settings.data_dir, settings.model) == (tmp_path, "/models/specter")


def test_settings_built_by_keyword_read_no_environment(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("PAPERREC_EMBED_BACKEND", "torch")
    environment.setenv("PAPERREC_API_KEYS", f"admin:{GOOD_KEY}")
    settings = Settings(redis_namespace="mine")
    assert (settings.embed_backend, settings.api_keys) == ("auto", "")


def test_settings_cannot_be_changed_only_copied() -> None:
    settings = Settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.model = "other"  # type: ignore[misc]
    changed = settings.replace(embed_batch_size=8)
    assert (settings.embed_batch_size, changed.embed_batch_size) == (64, 8)
    with pytest.raises(InvalidInput, match="PAPERREC_EMBED_BATCH_SIZE"):
        settings.replace(embed_batch_size="many")


# --- each rule, with the variable named ---------------------------------------------------------

BAD_VALUES = [
    ("PAPERREC_EMBED_BATCH_SIZE", "abc", "PAPERREC_EMBED_BATCH_SIZE='abc' is not an integer"),
    ("PAPERREC_EMBED_BATCH_SIZE", "0", "greater than or equal to 1"),
    ("PAPERREC_EXACT_INDEX_MAX", "20k", "PAPERREC_EXACT_INDEX_MAX='20k' is not an integer"),
    ("PAPERREC_SERVED_HISTORY_MAX", "0", "greater than or equal to 1"),
    ("PAPERREC_INDEX_CHECK_SECONDS", "soon", "PAPERREC_INDEX_CHECK_SECONDS='soon' is not a number"),
    ("PAPERREC_INDEX_CHECK_SECONDS", "nan", "not a finite number"),
    ("PAPERREC_EMBED_BACKEND", "tensorflow", "torch, onnx, onnx-int8"),
    ("PAPERREC_RATE_LIMIT", "600/day", "600/minute"),
    ("PAPERREC_RATE_LIMIT", "lots", "600/minute"),
    ("PAPERREC_API_KEYS", f"admin:{SHORT_KEY}", "at least 16 characters"),
    ("PAPERREC_API_KEYS", f"root:{GOOD_KEY}", "role client or admin"),
    ("PAPERREC_API_KEYS", GOOD_KEY, "role:key"),
    ("PAPERREC_PUBLIC_URL", "ftp://papers.example.org", "http:// or https://"),
    ("PAPERREC_PUBLIC_URL", "papers.example.org", "http:// or https://"),
    ("REDIS_URL", "localhost:6379", "redis://"),
    ("PAPERREC_ARXIV_OAI_URL", "oaipmh.arxiv.org/oai", "http:// or https://"),
    ("PAPERREC_ARXIV_RETRIES", "-1", "greater than or equal to 0"),
    ("PAPERREC_OPENREVIEW_URL", "api2.openreview.net", "http:// or https://"),
    ("PAPERREC_OPENREVIEW_DELAY_SECONDS", "-1", "greater than or equal to 0"),
    ("PAPERREC_ZOTERO_API_URL", "file:///etc/passwd", "http:// or https://"),
    ("PAPERREC_ZOTERO_BUDGET_SECONDS", "0", "greater than 0"),
    ("PAPERREC_EMBED_CLUSTER", "scheduler:8786", "such as tcp://scheduler:8786"),
    ("PAPERREC_EMBED_CLUSTER_TIMEOUT", "0", "greater than 0"),
    ("PAPERREC_EMBED_SHARD_SIZE", "0", "greater than or equal to 1"),
    ("PAPERREC_EMBED_PROCESSES", "-1", "greater than or equal to 0"),
]


@pytest.mark.parametrize(("variable", "value", "says"), BAD_VALUES)
def test_a_bad_value_is_refused_naming_its_variable(
    environment: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    environment.setenv(variable, value)
    with pytest.raises(InvalidInput) as refused:
        Settings.from_env()
    assert refused.value.message.startswith(variable)
    assert says in refused.value.message
    for other in set(VARIABLES.values()) - {variable}:
        assert other not in refused.value.message.replace(variable, "")


def test_every_bad_variable_is_named_in_one_error(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("PAPERREC_EMBED_BATCH_SIZE", "abc")
    environment.setenv("PAPERREC_EMBED_BACKEND", "gpu")
    environment.setenv("PAPERREC_PUBLIC_URL", "localhost:8000")
    with pytest.raises(InvalidInput) as refused:
        Settings.from_env()
    message = refused.value.message
    assert "\n" not in message
    for variable in ("PAPERREC_EMBED_BATCH_SIZE", "PAPERREC_EMBED_BACKEND",
                     "PAPERREC_PUBLIC_URL"):
        assert variable in message


def test_a_refused_api_key_is_never_shown(environment: pytest.MonkeyPatch) -> None:
    for entry in (f"admin:{SHORT_KEY}", "secretsecretsecretsecret", "root:secretsecretsecret"):
        environment.setenv("PAPERREC_API_KEYS", entry)
        with pytest.raises(InvalidInput) as refused:
            Settings.from_env()
        assert entry.partition(":")[2 if ":" in entry else 0] not in refused.value.message


def test_the_service_checks_with_the_settings_rules(tmp_path: Path) -> None:
    """check_backend, Limit.parse and ApiKeys.parse refuse what the settings refuse."""
    with pytest.raises(InvalidInput, match="PAPERREC_EMBED_BACKEND"):
        check_backend("tensorflow")
    assert check_backend("onnx") == "onnx"
    with pytest.raises(InvalidInput, match="PAPERREC_RATE_LIMIT.*600/minute"):
        Limit.parse("600/day")
    with pytest.raises(InvalidInput, match="PAPERREC_API_KEYS: .*at least 16 characters"):
        ApiKeys.parse(f"client:{SHORT_KEY}", "")
    keys_file = tmp_path / "api-keys"
    keys_file.write_text(f"# the keys\nadmin:{GOOD_KEY}\n\nclient:{SHORT_KEY}  # too short\n")
    with pytest.raises(InvalidInput) as refused:
        ApiKeys.parse("", str(keys_file))
    assert refused.value.message.startswith(f"PAPERREC_API_KEYS_FILE: {keys_file} line 4: ")
    assert "at least 16 characters" in refused.value.message
    with pytest.raises(InvalidInput, match="PAPERREC_API_KEYS_FILE: cannot read"):
        ApiKeys.parse("", str(tmp_path / "missing"))
    keys_file.write_text(f"admin:{GOOD_KEY}  # ops\nclient:{'c' * 20}\n")
    assert [role for _, role in ApiKeys.parse(f"client:{'d' * 16}", str(keys_file)).digests] == [
        "client", "admin", "client"]


# --- the command --------------------------------------------------------------------------------

def serve(tmp_path: Path, redis_url: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """`paperrec serve` on a free port; it must have ended within 30 seconds."""
    env = {**os.environ, "PAPERREC_DATA_DIR": str(tmp_path / "var"), "REDIS_URL": redis_url,
           "PAPERREC_API_KEYS": "", "PAPERREC_API_KEYS_FILE": "", **variables}
    port = free_port()
    started = time.monotonic()
    done = subprocess.run([str(PAPERREC), "serve", "--port", str(port)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert time.monotonic() - started < 30
    with socket.socket() as sock:  # nothing was left listening
        sock.bind(("127.0.0.1", port))
    return done


def test_serve_with_a_short_key_ends_with_one_line_before_gunicorn(
    tmp_path: Path, redis_url: str
) -> None:
    done = serve(tmp_path, redis_url, PAPERREC_API_KEYS=f"admin:{SHORT_KEY}")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("paperrec serve: PAPERREC_API_KEYS: ")
    assert "at least 16 characters" in done.stderr
    assert SHORT_KEY not in done.stderr
    assert "gunicorn" not in done.stderr.lower() and "Traceback" not in done.stderr
    assert not (tmp_path / "var").exists()  # nothing was started or made


@pytest.mark.parametrize(("variables", "says"), [
    ({"PAPERREC_API_KEYS_FILE": "missing-keys"}, "paperrec serve: PAPERREC_API_KEYS_FILE: "),
    ({"PAPERREC_RATE_LIMIT": "fast"}, "paperrec serve: PAPERREC_RATE_LIMIT: "),
])
def test_serve_checks_every_setting_before_gunicorn(
    tmp_path: Path, redis_url: str, variables: dict[str, str], says: str
) -> None:
    done = serve(tmp_path, redis_url, **variables)
    assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
    assert done.stderr.startswith(says)


def test_serve_checks_port_when_no_port_is_given(tmp_path: Path) -> None:
    env = {**os.environ, "PAPERREC_DATA_DIR": str(tmp_path / "var"), "PORT": "http"}
    done = subprocess.run([str(PAPERREC), "serve"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stderr) == (
        2, "paperrec serve: PORT='http' is not a port number (1-65535)\n")


@pytest.mark.parametrize("command", [
    ["ingest", "--sample"], ["rebuild-index"], ["train"], ["digest", "--dry-run", "out"],
    ["evaluate", "--papers", "p.jsonl", "--train", "t.tsv", "--test", "t.tsv",
     "--methods", "popular", "--json", "r.json"], ["fetch", "arxiv", "--category", "cs.LG"],
])  # serve: in a process of its own, above
def test_every_command_stops_on_a_bad_setting_with_one_line(
    environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    command: list[str],
) -> None:
    environment.chdir(tmp_path)
    environment.setenv("PAPERREC_EMBED_BATCH_SIZE", "lots")
    assert main(command) == 2
    out, err = capsys.readouterr()
    assert err == (f"paperrec {command[0]}: PAPERREC_EMBED_BATCH_SIZE='lots' is not an "
                   f"integer\n")
    assert out == "" and list(tmp_path.iterdir()) == []


def test_paperrec_settings_lists_every_variable_with_its_meaning_and_default(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["settings"]) == 0
    text = " ".join(capsys.readouterr().out.partition("environment")[2].split())
    for name, field in Settings.model_fields.items():
        assert VARIABLES[name] in text
        meaning = " ".join((field.description or "").split())
        assert meaning and meaning in text, f"{VARIABLES[name]}: no meaning in --help"
        if field.default != "":
            shown = f"{field.default:g}" if isinstance(field.default, float) else field.default
            assert f"{meaning} (default: {shown})" in text
    assert f"PORT port of paperrec serve when --port is not given (default: {DEFAULT_PORT})" \
        in text


# --- the documentation --------------------------------------------------------------------------

def test_the_configuration_page_describes_every_setting_with_its_default() -> None:
    """Each declared variable has a row of the Configuration page's table (made from the
    declarations by docs/gen_pages.py when the site is built); a default given there (the
    first code span of the cell) is the declared one once read as the setting reads it; an
    empty declared default is written in words (*(empty)*)."""
    rows = table(load_gen_pages().configuration_table(), "variable")
    documented = {code_spans(row[0])[0]: row[1] for row in rows}
    assert len(documented) == len(rows), "a variable with two rows"
    missing = set(VARIABLES.values()) - set(documented)
    assert not missing, f"the Configuration page lacks {sorted(missing)}"
    unknown = set(documented) - set(VARIABLES.values()) - set(NOT_SETTINGS)
    assert not unknown, f"the Configuration page describes {sorted(unknown)}, which nothing reads"
    for name, field in Settings.model_fields.items():
        cell = documented[VARIABLES[name]]
        if field.default == "":
            assert cell.startswith("*("), f"{VARIABLES[name]}: default is empty, docs {cell!r}"
            continue
        said = code_spans(cell)[0] if cell.startswith("`") else None
        assert said is not None, f"{VARIABLES[name]}: the docs give no default ({cell!r})"
        assert Settings.check(name, said) == field.default, (
            f"{VARIABLES[name]}: declared default {field.default!r}, docs {said!r}")
    for variable, default in NOT_SETTINGS.items():
        assert code_spans(documented[variable])[0] == default, variable
    contributing = (DOCS / "contributing.md").read_text()
    for variable, default in TEST_VARIABLES.items():
        assert f"`${variable}`" in contributing and f"`{default}`" in contributing, variable


def test_the_example_of_a_bad_setting_is_what_paperrec_prints(tmp_path: Path) -> None:
    block = (DOCS / "configuration.md").read_text().split("```console\n")[1]
    command, printed = block.splitlines()[:2]
    assignment, program, subcommand = command.removeprefix("$ ").split()
    variable, _, value = assignment.partition("=")
    env = {**os.environ, "PAPERREC_DATA_DIR": str(tmp_path / "var"), variable: value}
    done = subprocess.run([str(PAPERREC.with_name(program)), subcommand], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stderr) == (2, printed + "\n")
