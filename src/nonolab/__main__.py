"""``python -m nonolab``: the command-line interface."""

from nonolab.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
