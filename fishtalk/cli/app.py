"""The ``fishtalk`` typer app: global options, version, command registration and main().

The commands live in :mod:`fishtalk.cli.commands`, one module per group. This module (and
those) is imported by ``fishtalk --help``, so it must stay light: nothing heavy (textual,
livekit, numpy, sounddevice, httpx) at module level. Every command imports what it needs
inside its body.

Errors: a :class:`~fishtalk.core.errors.FishtalkError` prints one line on stderr and exits
with the code :func:`~fishtalk.cli.exits.exit_code_for` gives; a traceback only appears
with ``--debug``.
"""

import os
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from fishtalk._version import __version__
from fishtalk.cli.commands import (
    agenttest,
    chat,
    config,
    devices,
    journals,
    load,
    session,
    sim,
    tools,
)
from fishtalk.cli.exits import EXIT_ERROR, EXIT_OK, exit_code_for
from fishtalk.cli.shared import fail, state
from fishtalk.core.errors import FishtalkError

app = typer.Typer(
    name="fishtalk",
    help="Talk to Fish Audio realtime voice agents from your terminal.",
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell.
    add_completion=True,
    pretty_exceptions_enable=False,
    # Click's plain help layout: flags show no value placeholder (the rich layout labels
    # every flag, --help included, "<bool>"), help text is never read as markup, and the
    # sub-apps inherit it. Value options name their value with metavar=.
    rich_markup_mode=None,
    # Help paragraphs use the terminal's whole width (click would stop at 80 columns).
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 1000},
)

# Top-level commands, registered on the one app in the order `fishtalk --help` lists them
# (each module declares its commands on a nameless registry); the command groups follow.
_TOP_LEVEL = (
    chat.demo,
    agenttest.run_agent_tests,
    load.load_agent,
    chat.chat,
    devices.devices,
    devices.agents,
    devices.doctor,
    journals.sessions,
    journals.export,
    journals.diff,
    journals.replay,
)
_DECLARED = {
    info.callback: info
    for module in (chat, agenttest, load, devices, journals)
    for info in module.commands.registered_commands
}
app.registered_commands.extend(_DECLARED[callback] for callback in _TOP_LEVEL)
app.add_typer(session.app, name="session")
app.add_typer(config.app, name="config")
app.add_typer(tools.app, name="tools")
app.add_typer(sim.app, name="sim")


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"fishtalk {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="PATH",
            help="Config file to use (default: see `fishtalk config path`).",
            dir_okay=False,
        ),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show tracebacks and debug logs (also after the command, or FISHTALK_DEBUG=1).",
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_version_callback,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Talk to Fish Audio realtime voice agents from your terminal."""
    state.config_path = config
    state.debug = debug or state.debug
    ctx.obj = state


DEBUG_ENV = "FISHTALK_DEBUG"
"""Set (to anything but empty or 0) for the same effect as ``--debug``."""


def _take_debug(args: list[str]) -> tuple[list[str], bool]:
    """``args`` without ``--debug`` (accepted before or after the command, up to ``--``)."""
    end = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:end] if a != "--debug"] + args[end:]
    return kept, len(kept) != len(args)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI, mapping errors to one line and an exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    # --debug is global: `fishtalk --debug chat` and `fishtalk chat --debug` alike. It is
    # taken out here so every command accepts it, and known even when parsing fails.
    args, flagged = _take_debug(args)
    state.debug = flagged or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    if not args:
        args = ["--help"]  # bare `fishtalk`: the help, exit 0 (click's no_args_is_help exits 2)
    command = typer.main.get_command(app)
    from fishtalk.engine.hardening import make_non_dumpable
    from fishtalk.engine.native import keep_sdk_logs_off_stderr, quiet_livekit_handle_drops

    make_non_dumpable()  # before any command reads the API key
    keep_sdk_logs_off_stderr()
    quiet_livekit_handle_drops()
    try:
        # Standalone mode: typer itself reports usage errors (exit 2), --help, Exit and
        # Ctrl-C (exit 130) and always ends in SystemExit; only our own errors get here.
        command.main(args=args, prog_name="fishtalk", standalone_mode=True)
    except FishtalkError as exc:
        if state.debug:
            traceback.print_exc()
        fail(str(exc), exit_code_for(None, exc))
    except Exception as exc:
        if state.debug:
            traceback.print_exc()
        hint = "" if state.debug else " (run with --debug for details)"
        fail(f"unexpected error: {type(exc).__name__}: {exc}{hint}", EXIT_ERROR)
    raise SystemExit(EXIT_OK)
