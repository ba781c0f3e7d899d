#!/usr/bin/env python3
"""Fit collaborative filtering on the likes in Redis and publish it (`paperrec train`)."""

import sys

from service.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
