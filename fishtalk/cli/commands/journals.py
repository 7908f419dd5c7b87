"""``fishtalk sessions``, ``export``, ``diff`` and ``replay``: past sessions (their journals)."""

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fishtalk.cli.exits import EXIT_ERROR, EXIT_USAGE
from fishtalk.cli.options import PlainOption

if TYPE_CHECKING:
    pass


commands = typer.Typer()
"""This module's top-level commands (app.py registers them on the one app)."""

# --- journals -----------------------------------------------------------------------------


def _journal_dir() -> Path:
    from fishtalk.engine import paths

    return paths.journal_dir()


def _damaged(message: str | None) -> None:
    """A damaged journal was used up to the damage: say so on one line, exit 2."""
    if message:
        from fishtalk.core.text import strip

        sys.stdout.flush()
        typer.echo(f"fishtalk: {strip(message)}", err=True)
        raise typer.Exit(EXIT_USAGE)


@commands.command("sessions", short_help="List past sessions (their journals), newest first.")
def sessions(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON Lines.")] = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", min=1, help="Show at most N.")
    ] = 20,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Also list the journals of session requests that failed (no session opened).",
        ),
    ] = False,
) -> None:
    """List past sessions from their journals, newest first: id, when, agent, duration,
    turns, tools, errors and how each ended. Pass an id to `fishtalk export`."""
    from fishtalk.workbench.journal.compare import format_sessions, list_sessions

    directory = _journal_dir()
    rows = list_sessions(directory, requests=show_all)[:limit]
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row.to_dict(), ensure_ascii=False))
        return
    if not rows:
        typer.echo(f"no sessions yet (journals are kept in {directory})")
        return
    typer.echo(format_sessions(rows), nl=False)


@commands.command("export", short_help="Print a past session as md, txt, json, srt, vtt or html.")
def export(
    ref: Annotated[
        str,
        typer.Argument(
            metavar="ID|FILE", help="A journal id from `fishtalk sessions`, a session id or a file."
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="md|txt|json|srt|vtt|html",
            help="Markdown, plain text, JSON (with tool calls and per-turn timings), "
            "SRT/WebVTT subtitles on the session clock, or a self-contained HTML page.",
        ),
    ] = "md",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE.")
    ] = None,
) -> None:
    """Print a past session's transcript with speaker labels and times.

    A damaged journal is exported up to the damage, then one line says so (exit 2).
    """
    from fishtalk.engine.journal.reader import find_journal, read_journal, summarize_journal
    from fishtalk.workbench.journal.export import FORMATS, render

    if fmt not in (*FORMATS, "html"):
        raise typer.BadParameter(
            f"must be one of {', '.join(FORMATS)}, html", param_hint="--format"
        )
    journal = read_journal(find_journal(ref, _journal_dir()))
    if fmt == "html":
        from fishtalk.workbench.reports.session import session_page

        text = session_page(journal)
    else:
        text = render(summarize_journal(journal), next(f for f in FORMATS if f == fmt))
    if output is not None:
        output.write_text(text, "utf-8")
    else:
        typer.echo(text, nl=False)
    _damaged(journal.damage)


@commands.command("diff", short_help="Line up two sessions turn by turn and show what differs.")
def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="Journal id, session id or file.")],
    b: Annotated[str, typer.Argument(metavar="B", help="Journal id, session id or file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare two sessions turn by turn: transcript text, tools called (name and params)
    and per-turn timings (answer latency, turn length; 0.5 s tolerance).

    Exit codes: 0 the same, 1 different, 2 a journal is missing or damaged.
    """
    from fishtalk.core.text import json_escape
    from fishtalk.engine.journal.reader import find_journal, read_journal, summarize_journal
    from fishtalk.workbench.journal.compare import diff as compare
    from fishtalk.workbench.journal.compare import format_diff

    directory = _journal_dir()
    first = read_journal(find_journal(a, directory))
    second = read_journal(find_journal(b, directory))
    result = compare(summarize_journal(first), summarize_journal(second))
    if as_json:
        typer.echo(json_escape(json.dumps(result, ensure_ascii=False, indent=2)))
    else:
        typer.echo(format_diff(result), nl=False)
    _damaged(first.damage or second.damage)
    if not result["same"]:
        raise typer.Exit(EXIT_ERROR)


@commands.command("replay", short_help="Play a past session back in line mode, with its timing.")
def replay(
    ref: Annotated[str, typer.Argument(metavar="ID|FILE", help="Journal id, session id or file.")],
    speed: Annotated[
        float,
        typer.Option(
            "--speed",
            metavar="N",
            min=0,
            help="Play N times as fast (0: print everything at once).",
        ),
    ] = 1.0,
    plain: PlainOption = False,
) -> None:
    """Play a past session back with its original timing, read-only: no network, no audio.
    The TUI on a terminal (Space pauses, n jumps to the next turn, Left/Right seek 10 s,
    -/+ change the speed, Ctrl+X stops), line mode otherwise. A damaged journal plays up
    to the damage, then one line (exit 2)."""
    from fishtalk.cli.front_ends import wants_tui
    from fishtalk.core.text import strip
    from fishtalk.engine.journal.reader import find_journal, read_journal
    from fishtalk.plain.replay import play_plain

    journal = read_journal(find_journal(ref, _journal_dir()))
    if wants_tui(plain):
        from fishtalk.tui.replay import ReplayApp
        from fishtalk.tui.run import run_app
        from fishtalk.workbench.journal.replay_session import ReplaySession

        run_app(
            ReplaySession(journal, speed=speed),
            title=f"replay {journal.journal_id}",
            app_type=ReplayApp,
        )
        _damaged(journal.damage)
        return
    state = play_plain(journal, sys.stdout, speed=speed)
    ends = [r for r in journal.records if r.get("type") == "end"]
    if ends:
        typer.echo(f"* {strip(str(ends[-1].get('message') or ends[-1].get('reason')))}")
    elif not state.ended:
        typer.echo("* (the journal ends here: the session did not finish)")
    _damaged(journal.damage)
