"""Entry point: `python -m browser_actors observe URL [--mode html|axtree] [--do ACTION ...]` (see cli.py)."""

import sys

from browser_actors.cli import main

sys.exit(main())
