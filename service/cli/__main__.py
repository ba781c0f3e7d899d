"""`python -m service.cli`: the `paperrec` command."""

import sys

from service.cli import main

sys.exit(main())
