"""The `paperrec` command: batch jobs, the terminal views and the server, one subcommand each.

``parser.py`` declares every command and its arguments and imports nothing heavy, so that
``--help`` answers at once; each command names the function that runs it
(``"module:function"`` in this package), imported only when that command runs.
"""

from __future__ import annotations

import importlib
import os
import sys

from .parser import BAD_ARGUMENTS, build_parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `paperrec`: what it can do
        parser.print_help()
        return 0
    import logging

    from recommender.core.errors import ClusterUnreachable, InvalidInput, PaperrecError

    # The server logs what it does; batch jobs print a summary and only warn in the log.
    level = logging.INFO if args.command in ("serve", "jobs") else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # which CPU build it tried
    name = f"paperrec {args.command}"
    try:
        from recommender.core.config import Settings

        settings = Settings.from_env()
    except InvalidInput as exc:  # nothing has started yet
        print(f"{name}: {exc.message}", file=sys.stderr)
        return BAD_ARGUMENTS
    module, _, function = args.run.partition(":")
    run = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    try:
        return int(run(args, settings))
    except ClusterUnreachable as exc:  # an address to check, as a bad setting
        print(f"{name}: {exc.message}", file=sys.stderr)
        return BAD_ARGUMENTS
    except PaperrecError as exc:
        print(f"{name}: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
