"""``python -m fishtalk`` and the ``fishtalk`` command.

``fishtalk --version`` answers here, before the CLI (typer, click) is imported: it is the
one command that needs nothing else. Everything else goes to :func:`fishtalk.cli.app.main`.
"""

from __future__ import annotations

import sys

_VALUE_OPTIONS = ("--config",)
"""Root options that take a value (skipped when looking for --version)."""


def _asks_version(args: list[str]) -> bool:
    """Whether the root options (before any command) include ``--version``."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--version":
            return True
        elif arg in _VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-") or arg in ("--help", "-h", "--"):
            return False
    return False


def main() -> None:
    """The ``fishtalk`` console script."""
    if _asks_version(sys.argv[1:]):
        from fishtalk._version import __version__

        sys.stdout.write(f"fishtalk {__version__}\n")
        sys.stdout.flush()
        raise SystemExit(0)
    from fishtalk.cli.app import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
