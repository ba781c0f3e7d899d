"""`paperrec init`, `settings`, `migrate-redis` and `serve`: running a deployment."""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

from recommender import jobs, wiring
from recommender.core.config import Settings
from recommender.core.errors import InvalidInput, StoreUnavailable

from .parser import BAD_ARGUMENTS, DEFAULT_PORT

# Read by this command only, not settings of the library: (variable, meaning, default).
COMMAND_VARIABLES = [("PORT", "port of paperrec serve when --port is not given",
                      str(DEFAULT_PORT))]


def init(args: argparse.Namespace, settings: Settings) -> int:
    """What a new deployment needs, made only where it is missing (see the parser's text)."""
    app = wiring.build(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    print(f"init: {_api_keys_file(settings)}")
    app.secret  # noqa: B018 (made on first use: PAPERREC_SECRET_KEY, else secret.key)
    print("init: email links signed with " + ("PAPERREC_SECRET_KEY" if settings.secret_key
                                              else f"{settings.data_dir / 'secret.key'}"))
    if args.sample and app.corpus.count() == 0:
        print(f"init: sample corpus: {app.ingest(jobs.sample_files(), on_rejection=print)}")
    if app.index_store.current_version() is None and app.corpus.count():
        print(f"init: first index: {app.rebuild_index(progress=not args.quiet)}")
    print(f"init: {app.corpus.count()} papers, index version "
          f"{app.index_store.current_version() or 'none (the corpus is empty)'}")
    return 0


def _api_keys_file(settings: Settings) -> str:
    """Makes the keys file PAPERREC_API_KEYS_FILE names when it is missing: an admin and a
    client key (only a comment when PAPERREC_API_KEYS gives the keys), readable by its
    owner only."""
    if not settings.api_keys_file:
        return ("API keys: " + ("from PAPERREC_API_KEYS" if settings.api_keys else
                                "none (the API is open and served on loopback only)"))
    path = Path(settings.api_keys_file)
    if path.exists():
        return f"API keys in {path} (kept)"
    lines = (["# the keys are in PAPERREC_API_KEYS"] if settings.api_keys else
             [f"admin:{secrets.token_urlsafe(32)}", f"client:{secrets.token_urlsafe(32)}"])
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(staged, path)
    return f"API keys written to {path} (an admin and a client key; read them there)"


def show_settings(args: argparse.Namespace, settings: Settings) -> int:
    print(env_file() if args.env_file else environment_help(), end="")
    return 0


def environment_help() -> str:
    """Every variable with its meaning and default, made from the settings' declarations."""
    rows = _rows() + COMMAND_VARIABLES
    indent = 4 + max(len(variable) for variable, _, _ in rows)
    width = min(100, shutil.get_terminal_size().columns - 2)
    lines = ["environment (unset or empty: the default):"]
    for variable, meaning, default in rows:
        text = meaning + (f" (default: {default})" if default else "")
        first, *rest = textwrap.wrap(text, width=max(30, width - indent),
                                     break_on_hyphens=False) or [""]
        lines += [f"  {variable:<{indent - 2}}{first}"] + [" " * indent + line for line in rest]
    return "\n".join(lines) + "\n"


def env_file() -> str:
    """The settings as an env file docker compose reads: each commented out at its default,
    its meaning above it (made by `paperrec settings --env-file`; never edited by hand)."""
    lines = ["# paperrec's settings for docker compose, made by `paperrec settings --env-file`.",
             "# Uncomment a line to change a setting; docker-compose.yml sets the few that",
             "# differ inside its containers (data directory, Redis, mail server)."]
    for variable, meaning, default in _rows():
        lines += [""] + [f"# {line}" for line in textwrap.wrap(meaning, 96)]
        lines.append(f"# {variable}={default}")
    return "\n".join(lines) + "\n"


def _rows() -> list[tuple[str, str, str]]:
    return [(Settings.variable(name), field.description or "", _shown(field.default))
            for name, field in Settings.model_fields.items()]


def _shown(default: Any) -> str:
    return f"{default:g}" if isinstance(default, float) else str(default)


def migrate_redis(args: argparse.Namespace, settings: Settings) -> int:
    summary = wiring.build(settings).migrate_redis()
    if not summary.already_done:
        print(f"migrate-redis: {summary.keys_moved} keys moved; {summary.users} users, "
              f"{summary.liked_papers} liked papers counted")
    return 0


def serve(args: argparse.Namespace, settings: Settings) -> int:
    from service.auth import ApiKeys
    from service.server import run

    try:  # what the workers would find wrong stops here, before gunicorn starts
        keys = ApiKeys.parse(settings.api_keys, settings.api_keys_file)
        port = args.port if args.port is not None else _port_from_environment()
    except InvalidInput as exc:
        print(f"paperrec serve: {exc.message}", file=sys.stderr)
        return BAD_ARGUMENTS
    if args.host not in ("127.0.0.1", "localhost", "::1") and not keys:
        print(f"paperrec serve: refusing to listen on {args.host} without API keys; set "
              f"PAPERREC_API_KEYS (e.g. admin:<long random key>) or serve on 127.0.0.1",
              file=sys.stderr)
        return BAD_ARGUMENTS
    try:
        migrate_redis(args, settings)
    except StoreUnavailable as exc:  # the service answers 503 until Redis is back
        print(f"paperrec serve: keys not migrated, Redis unavailable ({exc.message}); "
              f"run `paperrec migrate-redis` once it answers", file=sys.stderr)
    run(settings, host=args.host, port=port, workers=args.workers, threads=args.threads)
    return 0


def _port_from_environment() -> int:
    raw = os.environ.get("PORT") or str(DEFAULT_PORT)
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise InvalidInput(f"PORT={raw!r} is not a port number (1-65535)")
    return int(raw)
