#!/usr/bin/env python3
"""Embed new papers and publish a new index version (same as `paperrec rebuild-index`)."""

import sys

from service.cli import main

if __name__ == "__main__":
    sys.exit(main(["rebuild-index", *sys.argv[1:]]))
