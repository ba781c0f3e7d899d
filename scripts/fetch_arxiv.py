#!/usr/bin/env python3
"""Harvest new papers from arXiv's OAI-PMH interface (same as `paperrec fetch arxiv`)."""

import sys

from service.cli import main

if __name__ == "__main__":
    sys.exit(main(["fetch", "arxiv", *sys.argv[1:]]))
