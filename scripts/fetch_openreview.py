#!/usr/bin/env python3
"""Fetch a conference's accepted papers from OpenReview (same as `paperrec fetch openreview`)."""

import sys

from service.cli import main

if __name__ == "__main__":
    sys.exit(main(["fetch", "openreview", *sys.argv[1:]]))
