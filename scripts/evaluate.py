#!/usr/bin/env python3
"""Evaluate recommendation methods on held-out likes (same as `paperrec evaluate`)."""

import sys

from service.cli import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", *sys.argv[1:]]))
