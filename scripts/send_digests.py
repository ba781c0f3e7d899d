#!/usr/bin/env python3
"""Email each due subscriber their reading list (same as `paperrec digest`)."""

import sys

from service.cli import main

if __name__ == "__main__":
    sys.exit(main(["digest", *sys.argv[1:]]))
