"""Entry point: `python -m browser_actors observe URL [--mode html|axtree] [--do ACTION ...]` (see cli.py)."""

from browser_actors.cli import main
from common.cli import run

run(main)
