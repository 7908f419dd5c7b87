"""The line-oriented front end: ``fishtalk chat --plain`` (and whenever stdout is no terminal).

It renders the conversation state as plain text lines: finished transcript lines, the
agent's state changes, tool cards, notices and errors. On a terminal the agent's text
streams onto its line as it is spoken; through a pipe only finished lines are printed, so
the output is stable and scriptable. Every piece of remote text (transcripts, tool names
and payloads, error details) is cleaned of control characters and escape sequences
before it reaches the terminal.

Input: each stdin line is a typed turn; lines starting with ``/`` are commands (see
:data:`HELP`). End of input waits for the agent to answer what was sent, then hangs up,
so ``printf 'hello\\n' | fishtalk chat --plain`` prints the reply and exits 0.

With ``--latency`` a line after each agent turn says how long it took to be heard
(:func:`fishtalk.core.conversation.note`), and one before the closing line gives the call's
p50, p95 and worst turn (:func:`fishtalk.core.conversation.summary_text`); that summary is
also printed without the flag once any turn was measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TextIO

from fishtalk.core import conversation as conv
from fishtalk.core.errors import EXIT_OK, exit_code_for
from fishtalk.core.talk import TalkControl, TalkMode
from fishtalk.core.text import strip
from fishtalk.engine.system import catch_sigint

if TYPE_CHECKING:
    from fishtalk.engine.host import HostLink
    from fishtalk.engine.session import EndResult, Session
    from fishtalk.engine.tools import ApprovalRequest

HELP: Final = """\
commands:
  /interrupt        stop the agent's current reply
  /hangup           end the session (so does end of input)
  /mute, /unmute    microphone off / on
  /talk             open the microphone, or close it (ends your spoken turn)
  /spoken on|off    whether typed turns get spoken replies
  /help             this list
anything else is sent to the agent as a typed message
at a tool's [y/N] question only y or n answers it; other lines still go to the agent"""

EOF_QUIET: Final = 1.5
"""After end of input: seconds of quiet (reply finished, agent listening) before hanging up."""
EOF_MAX_WAIT: Final = 60.0
"""After end of input: the longest wait for the agent's reply before hanging up anyway."""


def clean(text: str) -> str:
    """Remote text made safe for a terminal line: no escapes, no control or bidi characters."""
    return strip(text)


_SILENT_NOTICES: Final = frozenset(
    {"reconnecting", "reconnected", "agent_joined", "session_ending"}
)
"""Notices plain mode does not print: the status lines say the first three, and the line
saying how the session ended says the last (once)."""

_ANSWERS: Final[dict[str, bool]] = {
    "y": True,
    "yes": True,
    "/yes": True,
    "n": False,
    "no": False,
    "/no": False,
    "": False,
}
"""The only lines that answer a pending y/N question; any other line goes to the agent."""


def _tool_line(card: conv.ToolCard) -> str:
    status = card.display_status
    name = clean(card.tool_name)
    source = clean(card.source)
    if status == "running":
        line = f"[tool] {name} ({source}) running"
        if card.input:
            line += f": {clean(card.input)[:200]}"
        return line
    took = card.duration
    if took is None and card.client is not None:
        took = card.client.duration
    timing = f" in {took:.1f} s" if took is not None else ""
    line = f"[tool] {name} ({source}) {status}{timing}"
    detail = card.error or card.output
    if card.client is not None and detail is None:
        detail = card.client.error or card.client.result_preview
    if detail:
        cut = "…" if card.output_truncated and detail == card.output else ""
        line += f": {clean(detail)[:300]}{cut}"
    return line


def _agent_busy(state: conv.State) -> bool:
    """The agent is speaking (a line is open, or it said so and its line has not started)."""
    return state.speaking_segment is not None or state.agent_state == "speaking"


class PlainRenderer:
    """Turns successive :class:`~fishtalk.core.conversation.State` snapshots into lines.

    It prints what :func:`fishtalk.core.conversation.changes` reports, one line per fact:
    status and agent state changes, finished transcript lines, tool cards when their line
    changes, notices and errors. A typed message is printed when it is sent (so never
    before ``* connected``), and a line from the user's side waits while the agent is
    speaking, so the transcript reads in the order things were said. An error that is
    also why the session ended is left to the caller's closing line. With ``latency``,
    each measured turn and interrupt gets its latency note.

    A closed output (a reader that went away, as with ``| head``) is not an error: the
    renderer stops writing, sets :attr:`closed` and calls ``on_closed`` once.
    """

    def __init__(
        self,
        out: TextIO,
        *,
        stream_agent: bool,
        on_closed: Callable[[], None] | None = None,
        latency: bool = False,
    ) -> None:
        self._out = out
        self._stream = stream_agent
        self._latency = latency
        self._on_closed = on_closed
        self._previous = conv.initial_state()
        self._streaming: str | None = None
        """The agent segment whose text is streaming onto the current line (terminal)."""
        self._streamed = 0
        """How many characters of it are on screen."""
        self._held: list[str] = []
        """User-side lines waiting for the agent to finish speaking."""
        self.closed = False
        """The output was closed by its reader; nothing more is written."""
        self.last_sent_at: float | None = None
        """When the last typed message left (session clock)."""

    def render(self, state: conv.State) -> None:
        """Write whatever changed since the last call (call after every reduction)."""
        previous, self._previous = self._previous, state
        for event in conv.changes(previous, state):
            self._show(event, state)
        if self._held and (state.ended or not _agent_busy(state)):
            held, self._held = self._held, []
            for text in held:
                self.line(text)
        self.flush()

    def _show(self, event: conv.Change, state: conv.State) -> None:
        if isinstance(event, conv.StatusChanged):
            if event.status in ("connected", "reconnecting"):
                self.line(f"* {event.status}")
        elif isinstance(event, conv.AgentStateChanged):
            self.line(f"* agent {clean(event.agent_state)}")
        elif isinstance(event, conv.NoticeAdded):
            if event.notice.kind not in _SILENT_NOTICES:
                self.line(f"* {clean(event.notice.text)}")
        elif isinstance(event, conv.MessageSent):
            self.last_sent_at = state.clock.now
            self._user_line(f"you> {clean(event.segment.text)}", state)
        elif isinstance(event, conv.SegmentOpened | conv.SegmentGrew):
            seg = event.segment
            if self._stream and seg.role == "agent" and not seg.final:
                self._stream_agent(seg)
        elif isinstance(event, conv.SegmentFinalised):
            self._finished(event.segment, state)
        elif isinstance(event, conv.ToolCardAdded):
            self.line(_tool_line(event.card))
        elif isinstance(event, conv.ToolCardChanged):
            line = _tool_line(event.card)
            if line != _tool_line(event.previous):
                self.line(line)
        elif isinstance(event, conv.ErrorAdded):
            error = event.error
            if state.ended and error.code == state.end_reason:
                return  # why the session ended: the closing line says it, once
            detail = f" ({clean(error.detail)})" if error.detail else ""
            self.line(f"! {clean(error.message)}{detail}")
        elif isinstance(event, conv.TurnLatency | conv.InterruptLatency) and self._latency:
            if isinstance(event, conv.TurnLatency):
                self.line(f"* {conv.note(event.waterfall)}")
            else:
                self.line(f"* {conv.interrupt_note(event.interrupt)}")

    def _user_line(self, text: str, state: conv.State) -> None:
        if self._held or (_agent_busy(state) and not state.ended):
            self._held.append(text)
        else:
            self.line(text)

    def _stream_agent(self, seg: conv.Segment) -> None:
        if not seg.text:
            return
        if self._streaming is None:
            self._write(f"agent: {clean(seg.text)}")
            self._streaming, self._streamed = seg.segment_id, len(seg.text)
        elif self._streaming == seg.segment_id and len(seg.text) > self._streamed:
            self._write(clean(seg.text[self._streamed :]))
            self._streamed = len(seg.text)

    def _finished(self, seg: conv.Segment, state: conv.State) -> None:
        if seg.typed:
            return
        if seg.role == "user":
            if seg.text.strip():
                self._user_line(f"you: {clean(seg.text)}", state)
            return
        mark = " [interrupted]" if seg.interrupted else ""
        if self._streaming == seg.segment_id:
            self._write(clean(seg.text[self._streamed :]) + mark + "\n")
            self._streaming, self._streamed = None, 0
        elif seg.text.strip():
            self.line(f"agent: {clean(seg.text)}{mark}")

    def line(self, text: str) -> None:
        """Write one line, first ending a reply that is streaming on the current line."""
        if self._streaming is not None:
            # Another line interrupts a streaming reply: finish the line; the whole reply
            # is printed again when it is done.
            self._write(" …\n")
            self._streaming, self._streamed = None, 0
        self._write(text + "\n")

    def flush(self) -> None:
        """Flush the output (a closed output is noted, not raised)."""
        if self.closed:
            return
        try:
            self._out.flush()
        except (OSError, ValueError):
            self._mark_closed()

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self._out.write(text)
        except (OSError, ValueError):
            # BrokenPipeError (EPIPE) or a closed file: the reader has gone away.
            self._mark_closed()

    def _mark_closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._on_closed is not None:
            self._on_closed()


def _start_stdin_reader(
    loop: asyncio.AbstractEventLoop, on_line: Callable[[str | None], None], stdin: TextIO
) -> None:
    """Read stdin lines on a daemon thread (works for pipes, files and terminals alike);
    ``on_line(None)`` at end of input. A daemon thread, so a pending read never blocks exit.
    """

    def read() -> None:
        try:
            for raw in stdin:
                loop.call_soon_threadsafe(on_line, raw.rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop may have closed already
                loop.call_soon_threadsafe(on_line, None)

    threading.Thread(target=read, name="fishtalk-stdin", daemon=True).start()


@dataclass(eq=False)
class _Pending:
    """An approval question and the future its answer settles."""

    request: ApprovalRequest
    answer: asyncio.Future[bool]


class PlainChat:
    """Runs one session with stdin as the keyboard and stdout as the screen."""

    def __init__(
        self,
        session: Session,
        *,
        stdin: TextIO,
        stdout: TextIO,
        stream_agent: bool,
        talk_mode: TalkMode = "always",
        latency: bool = False,
    ) -> None:
        self.session = session
        self.talk = TalkControl(session, talk_mode, key="/talk")
        """The talk mode (line mode has no key releases: push works as toggle)."""
        self._stdin = stdin
        self._stdout = stdout
        self.renderer = PlainRenderer(
            stdout, stream_agent=stream_agent, on_closed=self._output_closed, latency=latency
        )
        self._approvals: deque[_Pending] = deque()
        """Questions waiting for an answer, oldest first; only the oldest is on screen."""
        self._eof_task: asyncio.Task[None] | None = None

    @property
    def output_closed(self) -> bool:
        """The reader of stdout went away (``| head``): the call was hung up because of it,
        and the caller should print nothing more and exit as after a normal end."""
        return self.renderer.closed

    def _output_closed(self) -> None:
        self.session.hangup()

    async def approve(self, request: ApprovalRequest) -> bool:
        """Ask on the terminal; only ``y``/``yes``/``/yes`` allow, ``n``/``no``/``/no`` or
        an empty line decline. Any other line is not an answer: it goes to the agent as
        usual, and the question stays.

        Questions are answered in the order they were asked: while one waits, later ones
        queue behind it and are shown when it is settled. A question whose call ends first
        (the tool's timeout, the session's end) is withdrawn with a line saying so.
        """
        if self.session.state.ended:
            return False
        pending = _Pending(request, asyncio.get_running_loop().create_future())
        self._approvals.append(pending)
        if len(self._approvals) == 1:
            self._ask(pending.request)
        else:
            waiting = len(self._approvals) - 1
            self._note(
                f"another approval is waiting ({clean(request.tool_name)}); "
                f"it is asked after the {'one' if waiting == 1 else f'{waiting}'} before it",
                mark="?",
            )
        try:
            return await pending.answer
        except asyncio.CancelledError:
            if pending in self._approvals:
                name = clean(request.tool_name)
                if self.session.state.ended:
                    self._note(f"approval for {name!r} cancelled: the session ended", mark="?")
                else:
                    self._note(f"approval for {name!r} timed out; declined", mark="?")
            raise
        finally:
            self._withdraw(pending)

    def _ask(self, request: ApprovalRequest) -> None:
        from fishtalk.engine.tools.approval import params_preview

        summary = clean(request.summary) if request.summary else ""
        self.renderer.line(
            f"? allow client tool {clean(request.tool_name)}{': ' + summary if summary else ''}"
        )
        self.renderer.line(f"  params: {params_preview(request.params, limit=300)} [y/N] ")
        self.renderer.line("  (answer y or n; any other line is sent to the agent)")
        self.renderer.flush()

    def _withdraw(self, pending: _Pending) -> None:
        """Take ``pending`` off the queue; if it was the question on screen, ask the next."""
        if not self._approvals or pending not in self._approvals:
            return
        was_first = self._approvals[0] is pending
        self._approvals.remove(pending)
        if was_first and self._approvals and not self.session.state.ended:
            self._ask(self._approvals[0].request)

    def _answer(self, allow: bool) -> None:
        """Settle the oldest question (its waiter then withdraws it and asks the next)."""
        pending = self._approvals[0]
        if not pending.answer.done():
            pending.answer.set_result(allow)
        self._withdraw(pending)

    async def run(self) -> EndResult:
        """Run the session to its end; returns how it ended (see also
        :attr:`output_closed`)."""
        loop = asyncio.get_running_loop()
        remove = self.session.add_listener(self.renderer.render)
        _start_stdin_reader(loop, self._on_line, self._stdin)
        if self.talk.mode != "always":
            if self.talk.mode == "push":
                self._note("line mode cannot hold a key: /talk opens the microphone and closes it")
            self._note(self.talk.look(line_mode=True).text)
        try:
            return await self.session.run()
        finally:
            remove()
            self.renderer.render(self.session.state)  # whatever the last reduction left
            if self._eof_task is not None:
                self._eof_task.cancel()

    def _on_line(self, line: str | None) -> None:
        session = self.session
        if line is None:
            unanswered = list(self._approvals)  # nobody is left to answer them
            self._approvals.clear()
            for pending in unanswered:
                if not pending.answer.done():
                    pending.answer.set_result(False)
            if not session.state.ended and self._eof_task is None:
                self._eof_task = asyncio.ensure_future(self._hangup_when_answered())
            return
        text = line.strip()
        if self._approvals:
            answer = _ANSWERS.get(text.lower())
            if answer is not None:
                self._answer(answer)
                return
            # Not an answer: a line for the agent (or a command), handled as usual below.
        if not text:
            return
        if text.startswith("/"):
            self._command(text)
        else:
            session.send_text(text)
        if self._approvals:
            name = clean(self._approvals[0].request.tool_name)
            self._note(f"still waiting: allow {name}? answer y or n", mark="?")

    def _command(self, text: str) -> None:
        session = self.session
        name, _, arg = text.partition(" ")
        arg = arg.strip().lower()
        if name == "/interrupt":
            session.interrupt()
        elif name == "/hangup":
            session.hangup()
        elif name == "/mute":
            session.set_muted(True)
            self._note("microphone muted")
        elif name == "/unmute":
            session.set_muted(False)
            self._note("microphone on")
        elif name == "/talk":
            self.talk.toggle()
            self._note(self.talk.look(line_mode=True).text)
        elif name == "/spoken" and arg in ("on", "off"):
            session.set_spoken(arg == "on")
            self._note(f"typed turns get {'spoken' if arg == 'on' else 'text-only'} replies")
        elif name == "/help":
            self._note(HELP)
        else:
            self._note(f"unknown command {clean(text)[:40]!r}; /help lists them")

    def _note(self, text: str, *, mark: str = "*") -> None:
        for line in text.splitlines():
            self.renderer.line(f"{mark} {line}")
        self.renderer.flush()

    async def _hangup_when_answered(self) -> None:
        """End of input: let the agent answer what was sent, then hang up."""
        session = self.session
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EOF_MAX_WAIT
        quiet_since: float | None = None
        changed = asyncio.Event()
        remove = session.add_listener(lambda _s: changed.set())
        try:
            while not session.state.ended and loop.time() < deadline:
                now = loop.time()
                if _answered(session.state, self.renderer.last_sent_at):
                    quiet_since = quiet_since if quiet_since is not None else now
                    if now - quiet_since >= EOF_QUIET:
                        break
                else:
                    quiet_since = None
                changed.clear()
                wait = EOF_QUIET if quiet_since is not None else deadline - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), max(0.05, min(wait, EOF_QUIET)))
        finally:
            remove()
        session.hangup()


def _answered(state: conv.State, sent_at: float | None) -> bool:
    """Every typed turn left, the agent replied after the last one, and it is quiet now.

    Cheap: it looks only at the segments since ``sent_at``, newest first."""
    if state.ended:
        return True
    if state.queued or state.status != "connected" or state.speaking_segment is not None:
        return False
    if sent_at is not None and not _agent_spoke_since(state, sent_at):
        return False
    return state.mode == "listening" and state.agent_state not in ("thinking", "speaking")


def _agent_spoke_since(state: conv.State, at: float) -> bool:
    for seg in reversed(state.segment_log):
        if seg.started_at < at:
            return False
        if seg.role == "agent":
            return True
    return False


class _PlainHost:
    """Line mode as a :class:`~fishtalk.engine.host.Host`: approval asks at the prompt; the
    built-ins keep their own terminal paths (OSC 52, the bell), so these two stay unused."""

    def __init__(self, chat: PlainChat) -> None:
        self._chat = chat

    def notify(self, title: str, message: str) -> None:
        del title, message

    def copy(self, text: str) -> None:
        raise RuntimeError("no clipboard in line mode")

    async def approve(self, request: ApprovalRequest) -> bool:
        return await self._chat.approve(request)


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
            link.bind(_PlainHost(chat))
        loop = asyncio.get_running_loop()

        def on_sigint() -> None:
            # First Ctrl-C: hang up properly (user.hangup, disconnect). A second one falls
            # back to the previous handler, which interrupts whatever is still running.
            nonlocal interrupted
            interrupted = True
            release_sigint()
            session.hangup()

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
    summary = conv.summarize(session.state.latency.turns)
    if latency or summary.measured:
        stdout.write(f"* {conv.summary_text(summary)}\n")
    if exit_code_for(result.reason, result.error) == EXIT_OK:
        stdout.write(f"* {clean(result.message)}\n")
        stdout.flush()
    else:
        stdout.flush()
        stderr.write(f"fishtalk: {clean(result.message)}\n")
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


__all__ = ["HELP", "PlainChat", "PlainRenderer", "clean", "run_plain"]
