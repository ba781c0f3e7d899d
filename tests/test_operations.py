"""Running a deployment from the command line: `paperrec init`, `jobs`, `stats`, `search`,
`list`, `settings`, `--version`, and a `--help` that answers at once."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from recommender.core.config import Settings
from service.cli import main
from service.cli.operations import env_file

Like = Callable[..., None]
PapersAbout = Callable[[Settings, str], list[str]]
PAPERREC = [sys.executable, "-m", "service.cli"]
HEAVY = ("numpy", "flask", "pydantic", "torch", "faiss", "redis", "sklearn", "requests")


def use(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment that gives `paperrec` these settings (also returned, for a process)."""
    variables = {"PAPERREC_DATA_DIR": str(settings.data_dir), "REDIS_URL": settings.redis_url,
                 "PAPERREC_REDIS_NAMESPACE": settings.redis_namespace}
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return {**os.environ, **variables}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- the command line itself ------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["--help"], ["fetch", "arxiv", "--help"],
                                  ["evaluate", "--help"], ["serve", "--help"], []])
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    """What makes `--help` answer at once: nothing of the engine, Flask or pydantic is
    imported to print it (measured in docs/contributing.md: 0.1-0.2 s)."""
    probe = ("import sys\nfrom service.cli import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit:\n    pass\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage: paperrec" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_bare_paperrec_prints_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys)
    assert code == 0
    for command in ("init", "jobs", "stats", "search", "list", "serve", "rebuild-index"):
        assert f"\n    {command}" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"paperrec {version('paperrec')}\n"


@pytest.mark.parametrize(("argv", "says"), [
    (["fetch", "arxiv", "--category", "cs.XX"], "unknown arXiv category 'cs.XX' (did you mean"),
    (["fetch", "arxiv", "--category", "cs.lg"], "did you mean cs.LG"),
    (["search", "graphs", "-k", "0"], "expected a whole number of 1 or more"),
    (["evaluate", "--papers", "p", "--train", "t", "--test", "t", "--methods", "hybrid",
      "--json", "o", "--index", "ivf"], "'ivf' is no index kind"),
    (["evaluate", "--papers", "p", "--train", "t", "--test", "t", "--methods", "hybrid",
      "--json", "o", "--onboarding", "5,0"], "numbers of answers from 1 to 50"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_mistaken_arguments_exit_2_and_say_why(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_the_env_file_lists_every_setting_commented_at_its_default(
    capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "settings", "--env-file")
    assert code == 0 and out == env_file()
    assert "# PAPERREC_JOBS_INTERVAL_SECONDS=3600\n" in out
    assert not [line for line in out.splitlines() if line and not line.startswith("#")]


# --- init -------------------------------------------------------------------------------------

def test_init_makes_keys_and_secret_once_and_keeps_them(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(settings, monkeypatch)
    keys = settings.data_dir / "api-keys"
    monkeypatch.setenv("PAPERREC_API_KEYS_FILE", str(keys))
    code, out, _ = run(capsys, "init")
    assert code == 0 and f"API keys written to {keys}" in out
    lines = keys.read_text().splitlines()
    assert [line.split(":")[0] for line in lines] == ["admin", "client"]
    assert all(len(line.split(":", 1)[1]) >= 32 for line in lines)
    assert keys.stat().st_mode & 0o077 == 0, "only its owner reads the keys"
    secret = (settings.data_dir / "secret.key").read_text()
    assert "index version none (the corpus is empty)" in out

    code, out, _ = run(capsys, "init")
    assert code == 0 and f"API keys in {keys} (kept)" in out
    assert keys.read_text().splitlines() == lines
    assert (settings.data_dir / "secret.key").read_text() == secret


def test_init_with_inline_keys_writes_none_to_the_file(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(settings, monkeypatch)
    keys = settings.data_dir / "api-keys"
    monkeypatch.setenv("PAPERREC_API_KEYS_FILE", str(keys))
    monkeypatch.setenv("PAPERREC_API_KEYS", "admin:" + "k" * 20)
    assert run(capsys, "init")[0] == 0
    assert keys.read_text() == "# the keys are in PAPERREC_API_KEYS\n"


@pytest.mark.model
def test_init_with_the_sample_builds_the_first_index_once(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(settings, monkeypatch)
    code, out, _ = run(capsys, "init", "--sample", "--quiet")
    assert code == 0
    assert "sample corpus: added 38" in out and "first index: published index version 000001" in out
    code, out, _ = run(capsys, "init", "--sample", "--quiet")
    assert code == 0 and "sample corpus" not in out and "first index" not in out
    assert out.strip().endswith("38 papers, index version 000001")


# --- jobs -------------------------------------------------------------------------------------

def test_a_round_reports_every_step_and_goes_on_after_a_failed_one(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(settings, monkeypatch)
    code, out, _ = run(capsys, "jobs", "--once")
    assert code == 1  # the rebuild failed: the corpus is empty
    lines = out.splitlines()
    assert lines[:3] == [
        "jobs: fetch arxiv: skipped (PAPERREC_ARXIV_CATEGORIES is empty)",
        "jobs: sync zotero: skipped (no Zotero library is connected)",
        f"jobs: rebuild-index: failed (the corpus in {settings.corpus_path} is empty: ingest "
        "papers first, e.g. `paperrec ingest --sample` or `paperrec ingest papers.jsonl`)"]
    assert lines[3].startswith("jobs: train: done (nothing new: collaborative model version "
                               "(none) was trained on these 0 likes")
    assert lines[4] == "jobs: digest: skipped (SMTP_URL is empty)"
    assert lines[5:] == [
        "jobs: export events: done (exported 0 lists and 0 outcomes into 0 daily files; "
        f"figures of the last 7 days in {settings.data_dir / 'events' / 'report-latest.json'})"]


def test_one_jobs_at_a_time_and_sigterm_stops_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    environment = use(settings, monkeypatch)
    settings.data_dir.mkdir(parents=True)
    with (settings.data_dir / "jobs.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a first `paperrec jobs` would
        second = subprocess.Popen([*PAPERREC, "jobs"], env=environment, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert second.stderr is not None and second.stdout is not None
        assert "holds" in second.stderr.readline() and second.poll() is None
        time.sleep(0.5)
        assert second.poll() is None  # still waiting: it has run nothing
    first_line = second.stdout.readline()  # the lock is free: its first round runs
    assert first_line.startswith("jobs: fetch arxiv: skipped")
    for _ in range(4):
        second.stdout.readline()
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 0


# --- stats, search and list -------------------------------------------------------------------

def test_stats_counts_papers_index_and_readers(
    sample_settings: Settings, client: FlaskClient, like: Like, paper_ids_about: PapersAbout,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(sample_settings, monkeypatch)
    papers = paper_ids_about(sample_settings, "federated")
    like(client, "ada", papers[0])
    like(client, "ada", papers[1], "dislike")
    like(client, "bob", papers[0])
    code, out, _ = run(capsys, "stats")
    assert code == 0
    assert "papers          38 (0 withdrawn, 0 uploads pending review)" in out
    assert "index           version 000001: 38 papers, exact" in out
    assert "readers         2: 2 likes, 1 dislikes, 0 digest subscribers" in out
    code, out, _ = run(capsys, "stats", "--json")
    assert '"likes": 2' in out


def test_stats_says_when_redis_is_down(
    sample_settings: Settings, unreachable_redis_url: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    use(sample_settings.replace(redis_url=unreachable_redis_url), monkeypatch)
    code, out, _ = run(capsys, "stats")
    assert code == 0 and "papers          38" in out
    assert "readers         Redis unavailable" in out


def test_list_shows_a_readers_list_with_reasons(
    sample_settings: Settings, client: FlaskClient, like: Like, paper_ids_about: PapersAbout,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(sample_settings, monkeypatch)
    liked = paper_ids_about(sample_settings, "federated")[0]
    like(client, "ada", liked)
    code, out, _ = run(capsys, "list", "ada", "-k", "3")  # records nothing as served
    api = client.get("/v1/users/ada/recommendations?k=3").get_json()
    assert code == 0 and out.startswith("ada's reading list (personal; index 000001)")
    for rank, item in enumerate(api["items"], 1):
        assert f"{rank:>3}. {item['title']}\n     {item['paper_id']}  {item['reason']}" in out


@pytest.mark.model
def test_search_finds_the_papers_about_the_words(
    model_sample_settings: Settings, paper_ids_about: PapersAbout,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(model_sample_settings, monkeypatch)
    code, out, _ = run(capsys, "search", "federated learning", "-k", "3")
    assert code == 0
    found = [line.split()[0] for line in out.splitlines()[1::2]]
    assert len(found) == 3 and out.startswith("  1. ")
    federated = set(paper_ids_about(model_sample_settings, "federated"))
    assert len(federated & set(found)) >= 2, out



def test_a_broken_bibtex_entry_is_reported_once_in_our_words(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    use(settings, monkeypatch)
    library = tmp_path / "mine.bib"
    library.write_text("@article{broken\n title = {x\n")
    code, out, err = run(capsys, "import-library", str(library), "--user", "ada")
    assert code == 0 and "rejected 1" in out
    assert err == (f"{library}:line 1: broken: malformed BibTeX entry: Expected comma after "
                   f"entry key, but found =\n")
    assert not [r for r in caplog.records if r.name.startswith("bibtexparser")]


def test_trains_progress_bar_says_what_it_counts(
    sample_settings: Settings, client: FlaskClient, like: Like, paper_ids_about: PapersAbout,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(sample_settings, monkeypatch)
    for user, paper in zip(("ada", "bob"), paper_ids_about(sample_settings, "federated"),
                           strict=False):
        like(client, user, paper)
    code, out, err = run(capsys, "train")
    assert code == 0 and out.startswith("train: published collaborative model version")
    assert "training ALS: 100%" in err and "iteration" in err


def test_the_parsers_light_copies_agree_with_the_library(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """parser.py names the library formats and index kinds itself (importing the modules that
    own them would slow every --help): the copies must stay the library's."""
    from recommender.corpus.library import FORMATS
    from recommender.evaluation.methods import INDEX_KINDS
    from service.cli.parser import LIBRARY_FORMATS

    assert LIBRARY_FORMATS == FORMATS
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "--index {" + ",".join(INDEX_KINDS) + "}" in capsys.readouterr().out
