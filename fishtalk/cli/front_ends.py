"""Choosing and running the front end of a call: the chat TUI or the line mode.

:func:`run_chat` picks one (:func:`wants_tui`) and runs the session the parts of
:mod:`fishtalk.cli.launch` make. Heavy modules (textual, livekit) load inside the functions.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, TextIO

from fishtalk.cli.exits import EXIT_CONNECTION, EXIT_INTERRUPTED, exit_code_of

if TYPE_CHECKING:
    from fishtalk.cli.settings import Settings
    from fishtalk.engine.metrics import MetricsFile
    from fishtalk.engine.session import GrantSource
from fishtalk.cli.launch import JournalChoice, attach_journal, build_session, tool_runner


def wants_tui(
    plain: bool | None, *, stdin: TextIO | None = None, stdout: TextIO | None = None
) -> bool:
    """Whether ``fishtalk chat`` opens the TUI: not asked for plain mode, and both ends of
    the conversation are a terminal (pipes and redirects keep the line mode)."""
    if plain:
        return False
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        return stdin.isatty() and stdout.isatty()
    except ValueError:  # a closed stream
        return False


def run_tui(
    settings: Settings,
    *,
    title: str = "",
    grant: GrantSource | None = None,
    note: str | None = None,
    first_frame: threading.Event | None = None,
    journal: JournalChoice | None = None,
    metrics: MetricsFile | None = None,
) -> int:
    """Run one session in the full-screen TUI; return the process exit code.

    ``grant``: where the grant comes from (default: the session API, as the settings say);
    ``note``: a notice shown from the first frame (what happens before connecting);
    ``first_frame``: set once the first frame is drawn.
    """
    from fishtalk.core.errors import ConfigError
    from fishtalk.engine.host import HostLink
    from fishtalk.tui import keys
    from fishtalk.tui.run import journal_info, run_app

    try:
        keys.keymap(settings.ui.keys)
    except ValueError as exc:
        raise ConfigError(f"[ui.keys]: {exc}") from None
    link = HostLink()
    tools = tool_runner(settings, link)
    session = build_session(settings, tools=tools, grant=grant)
    recording = attach_journal(settings, session, journal, front_end="tui", tools=tools)
    if note:
        session.notice(note)
    try:
        outcome = run_app(
            session,
            link=link,
            title=title or (settings.session.agent_id or ""),
            keymap=settings.ui.keys,
            first_frame=first_frame,
            talk_mode=settings.audio.talk_mode,
            journal=journal_info(recording.writer),
        )
    finally:
        recording.close()
        if metrics is not None:
            metrics.write(session.state, journal_origin=recording.clock_origin)
    return exit_code_of(outcome) if outcome is not None else EXIT_CONNECTION


def run_plain(
    settings: Settings,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    debug: bool = False,
    journal: JournalChoice | None = None,
    metrics: MetricsFile | None = None,
    latency: bool = False,
) -> int:
    """Run one session in line mode; return the process exit code.

    With ``--events`` (``journal.events``) the conversation's lines go to stderr, so the
    events stream alone is on stdout. ``latency`` (``--latency``): a latency note after
    each agent turn; ``metrics`` (``--metrics-json``) is written when the call ends."""
    from fishtalk.engine.host import HostLink
    from fishtalk.plain import line as plain

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    if journal is not None and journal.events is not None:
        stdout = stderr or sys.stderr
    link = HostLink()
    tools = tool_runner(settings, link, answers_from=stdin, question_to=stdout, host_builtins=False)
    session = build_session(settings, tools=tools)
    recording = attach_journal(settings, session, journal, front_end="plain", tools=tools)
    try:
        result = plain.run_plain(
            session,
            link=link,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            debug=debug,
            talk_mode=settings.audio.talk_mode,
            latency=latency,
        )
    finally:
        recording.close()
        if metrics is not None:
            metrics.write(session.state, journal_origin=recording.clock_origin)
    return EXIT_INTERRUPTED if result is None else exit_code_of(result)


def run_chat(
    settings: Settings,
    *,
    debug: bool = False,
    journal: JournalChoice | None = None,
    metrics: MetricsFile | None = None,
    latency: bool = False,
) -> int:
    """``fishtalk chat``: the TUI on a terminal, line mode otherwise; the exit code."""
    if wants_tui(settings.ui.plain) and (journal is None or journal.events is None):
        return run_tui(settings, journal=journal, metrics=metrics)
    return run_plain(settings, debug=debug, journal=journal, metrics=metrics, latency=latency)
