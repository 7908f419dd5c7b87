"""The line-oriented front end: ``fishtalk chat --plain`` (and whenever stdout is no terminal).

It renders the conversation state as plain text lines: finished transcript lines, the
agent's state changes, tool cards, notices and errors. On a terminal the agent's text
streams onto its line as it is spoken; through a pipe only finished lines are printed, so
the output is stable and scriptable. Every piece of remote text (transcripts, tool names
and payloads, error details) is stripped of control characters and escape sequences
before it reaches the terminal.

Input: each stdin line is a typed turn; lines starting with ``/`` are commands (see
:data:`fishtalk.plain.chat.HELP`). End of input waits for the agent to answer what was
sent (and stop speaking), then hangs up, so ``printf 'hello\\n' | fishtalk chat --plain``
prints the reply and exits 0. A line that a hang-up cuts ends with ``[interrupted]``.

This module runs the loop (:func:`run_plain`); :mod:`fishtalk.plain.render` draws the
lines and :mod:`fishtalk.plain.chat` reads the keyboard.

With ``--latency`` a line after each agent turn says how long it took to be heard
(:func:`fishtalk.core.conversation.note`), and one before the closing line gives the call's
p50, p95 and worst turn (:func:`fishtalk.core.conversation.summary_text`); that summary is
also printed without the flag once any turn was measured.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, TextIO

from fishtalk.core import conversation as conv
from fishtalk.core.errors import ended_well
from fishtalk.core.talk import TalkMode
from fishtalk.engine.system import catch_sigint
from fishtalk.plain.chat import PlainChat, PlainHost
from fishtalk.plain.render import closing_notes, stripped

if TYPE_CHECKING:
    from fishtalk.engine.host import HostLink
    from fishtalk.engine.session import EndResult, Session


def run_plain(
    session: Session,
    *,
    link: HostLink | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    debug: bool = False,
    talk_mode: TalkMode = "always",
    latency: bool = False,
) -> EndResult | None:
    """Run ``session`` in plain mode; returns how it ended (None: interrupted by Ctrl-C).

    ``link`` (the tools' view of the front end) is bound to this chat once it exists.
    ``latency``: a latency note after each agent turn (see the module's docstring).
    Logs (the SDK's included) go to stderr only with ``debug``; otherwise the terminal shows
    nothing but the conversation and one line saying how it ended.
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    _configure_logging(stderr, debug)
    interactive = stdin.isatty() and stdout.isatty()
    interrupted = False
    chats: list[PlainChat] = []

    async def main() -> EndResult:
        nonlocal interrupted
        chat = PlainChat(
            session,
            stdin=stdin,
            stdout=stdout,
            stream_agent=stdout.isatty(),
            talk_mode=talk_mode,
            latency=latency,
        )
        chats.append(chat)
        if link is not None:
            link.bind(PlainHost(chat))
        loop = asyncio.get_running_loop()

        def on_sigint() -> None:
            # First Ctrl-C: hang up properly (user.hangup, disconnect). A second one falls
            # back to the previous handler, which interrupts whatever is still running.
            nonlocal interrupted
            interrupted = True
            release_sigint()
            chat.hang_up(conv.END_INTERRUPTED)  # a line being said is printed as cut

        # Unix: the loop's signal handler; Windows: signal.signal (see fishtalk.engine.system).
        release_sigint = catch_sigint(loop, on_sigint)
        if interactive:
            stdout.write("* type a message and press Enter; /help lists commands\n")
        return await chat.run()

    try:
        result: EndResult | None = asyncio.run(main())
    except KeyboardInterrupt:
        interrupted, result = True, None
    if interrupted:
        stdout.flush()
        stderr.write("fishtalk: interrupted; hung up\n")
        return None
    assert result is not None
    if chats and chats[0].output_closed:
        # The reader went away (``| head``): the call was hung up; nothing more to print.
        return result
    for note in closing_notes(session.state, latency=latency):
        stdout.write(f"{note}\n")
    if ended_well(result.reason, result.error):
        stdout.write(f"* {stripped(result.message)}\n")
        stdout.flush()
    else:
        stdout.flush()
        stderr.write(f"fishtalk: {stripped(result.message)}\n")
        stderr.flush()
    return result


def _configure_logging(stderr: TextIO, debug: bool) -> None:
    root = logging.getLogger()
    if root.handlers:
        return  # someone (a test, an embedding app) already decided
    if debug:
        logging.basicConfig(
            level=logging.DEBUG, stream=stderr, format="%(asctime)s %(name)s %(message)s"
        )
    else:
        # Without a handler Python prints warnings (the SDK's fall-back chatter) on stderr.
        root.addHandler(logging.NullHandler())


__all__ = ["run_plain"]
