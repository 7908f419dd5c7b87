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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TextIO

from fishtalk import conversation as conv
from fishtalk.errors import EXIT_OK, exit_code_for

if TYPE_CHECKING:
    from fishtalk.host import HostLink
    from fishtalk.session import EndResult, Session
    from fishtalk.tools import ApprovalRequest

HELP: Final = """\
commands:
  /interrupt        stop the agent's current reply
  /hangup           end the session (so does end of input)
  /mute, /unmute    microphone off / on
  /spoken on|off    whether typed turns get spoken replies
  /help             this list
anything else is sent to the agent as a typed message"""

EOF_QUIET: Final = 1.5
"""After end of input: seconds of quiet (reply finished, agent listening) before hanging up."""
EOF_MAX_WAIT: Final = 60.0
"""After end of input: the longest wait for the agent's reply before hanging up anyway."""

_ANSI: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (title, hyperlinks...)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[@-Z\\-_]?"  # other two-byte escapes, or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """Remote text made safe for a terminal line: no escapes, no control or bidi characters."""
    return _CONTROL.sub(" ", _ANSI.sub("", text))


@dataclass
class _Printed:
    """What of the state has been written already."""

    status: str = "connecting"
    agent_state: str | None = None
    segments: set[str] = field(default_factory=set)
    streaming: str | None = None
    """The agent segment whose text is streaming onto the current line (terminal only)."""
    streamed: int = 0
    """How many characters of it are on screen."""
    tools: dict[str, str] = field(default_factory=dict)
    """call_id -> the last status line printed for it."""
    errors: int = 0
    notices: int = 0


class PlainRenderer:
    """Turns successive :class:`~fishtalk.conversation.State` snapshots into lines."""

    def __init__(self, out: TextIO, *, stream_agent: bool) -> None:
        self._out = out
        self._stream = stream_agent
        self._seen = _Printed()

    def render(self, state: conv.State) -> None:
        """Write whatever is new in ``state`` (call after every reduction)."""
        seen = self._seen
        if state.status != seen.status:
            seen.status = state.status
            if state.status in ("connected", "reconnecting"):
                self.line(f"* {state.status}")
        if state.agent_state is not None and state.agent_state != seen.agent_state:
            seen.agent_state = state.agent_state
            self.line(f"* agent {clean(state.agent_state)}")
        for notice in state.notices[seen.notices :]:
            if not notice.text.startswith(("Reconnect", "The agent joined")):
                self.line(f"* {clean(notice.text)}")
        seen.notices = len(state.notices)
        self._transcript(state)
        for card in state.tools:
            self._tool(card)
        for error in state.errors[seen.errors :]:
            detail = f" ({clean(error.detail)})" if error.detail else ""
            self.line(f"! {clean(error.message)}{detail}")
        seen.errors = len(state.errors)
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._out.flush()

    def _transcript(self, state: conv.State) -> None:
        seen = self._seen
        for seg in state.transcript:
            if seg.segment_id in seen.segments:
                continue
            if seg.typed:
                seen.segments.add(seg.segment_id)
                self.line(f"you> {clean(seg.text)}")
                continue
            who = "you" if seg.role == "user" else "agent"
            if seg.final:
                seen.segments.add(seg.segment_id)
                mark = " [interrupted]" if seg.interrupted else ""
                if seen.streaming == seg.segment_id:
                    self._write(clean(seg.text[seen.streamed :]) + mark + "\n")
                    seen.streaming, seen.streamed = None, 0
                else:
                    self.line(f"{who}: {clean(seg.text)}{mark}")
            elif self._stream and seg.role == "agent" and seg.text:
                if seen.streaming is None:
                    self._write(f"agent: {clean(seg.text)}")
                    seen.streaming, seen.streamed = seg.segment_id, len(seg.text)
                elif seen.streaming == seg.segment_id and len(seg.text) > seen.streamed:
                    self._write(clean(seg.text[seen.streamed :]))
                    seen.streamed = len(seg.text)

    def _tool(self, card: conv.ToolCard) -> None:
        status = card.display_status
        name = clean(card.tool_name)
        source = clean(card.source)
        if status == "running":
            line = f"[tool] {name} ({source}) running"
            if card.input:
                line += f": {clean(card.input)[:200]}"
        else:
            took = card.duration if card.duration is not None else None
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
        if self._seen.tools.get(card.call_id) != line:
            self._seen.tools[card.call_id] = line
            self.line(line)

    def line(self, text: str) -> None:
        """Write one line, first ending a reply that is streaming on the current line."""
        seen = self._seen
        if seen.streaming is not None:
            # Another line interrupts a streaming reply: finish the line; the rest of the
            # reply is printed when it is done.
            self._write(" …\n")
            seen.segments.discard(seen.streaming)
            seen.streaming, seen.streamed = None, 0
        self._write(text + "\n")

    def _write(self, text: str) -> None:
        # The reader may have gone away (closed pipe); the session still ends cleanly.
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._out.write(text)


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
    ) -> None:
        self.session = session
        self._stdin = stdin
        self._stdout = stdout
        self.renderer = PlainRenderer(stdout, stream_agent=stream_agent)
        self._approvals: deque[_Pending] = deque()
        """Questions waiting for an answer, oldest first; only the oldest is on screen."""
        self._eof_task: asyncio.Task[None] | None = None
        self._last_typed: str | None = None
        self._last_sent_at: float | None = None
        """When the last typed turn left (session clock); its reply starts after it."""

    def _track_sent(self, state: conv.State) -> None:
        typed = [seg for seg in state.transcript if seg.typed]
        if typed and not typed[-1].queued and typed[-1].segment_id != self._last_typed:
            self._last_typed = typed[-1].segment_id
            self._last_sent_at = state.clock.now

    async def approve(self, request: ApprovalRequest) -> bool:
        """Ask on the terminal; the next input line answers (y/yes allows).

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
        from fishtalk.tools.approval import params_preview

        summary = clean(request.summary) if request.summary else ""
        self.renderer.line(
            f"? allow client tool {clean(request.tool_name)}{': ' + summary if summary else ''}"
        )
        self.renderer.line(f"  params: {params_preview(request.params, limit=300)} [y/N] ")
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._stdout.flush()

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
        """Run the session to its end; returns how it ended."""
        loop = asyncio.get_running_loop()
        remove_tracker = self.session.add_listener(self._track_sent)
        remove = self.session.add_listener(self.renderer.render)
        _start_stdin_reader(loop, self._on_line, self._stdin)
        try:
            return await self.session.run()
        finally:
            remove()
            remove_tracker()
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
        if self._approvals:
            self._answer(line.strip().lower() in ("y", "yes"))
            return
        text = line.strip()
        if not text:
            return
        if text.startswith("/"):
            self._command(text)
            return
        session.send_text(text)

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
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._stdout.flush()

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
                if _answered(session.state, self._last_sent_at):
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
    """Every typed turn left, the agent replied after the last one, and it is quiet now."""
    if state.ended:
        return True
    if state.queued or state.status != "connected":
        return False
    agent = [seg for seg in state.transcript if seg.role == "agent"]
    if any(seg.open for seg in agent):
        return False
    if sent_at is not None and not any(seg.started_at >= sent_at for seg in agent):
        return False
    return state.mode == "listening" and state.agent_state not in ("thinking", "speaking")


class _PlainHost:
    """Line mode as a :class:`~fishtalk.host.Host`: approval asks at the prompt; the
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
) -> EndResult | None:
    """Run ``session`` in plain mode; returns how it ended (None: interrupted by Ctrl-C).

    ``link`` (the tools' view of the front end) is bound to this chat once it exists.
    Logs (the SDK's included) go to stderr only with ``debug``; otherwise the terminal shows
    nothing but the conversation and one line saying how it ended.
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    _configure_logging(stderr, debug)
    interactive = stdin.isatty() and stdout.isatty()
    interrupted = False

    async def main() -> EndResult:
        nonlocal interrupted
        chat = PlainChat(session, stdin=stdin, stdout=stdout, stream_agent=stdout.isatty())
        if link is not None:
            link.bind(_PlainHost(chat))
        loop = asyncio.get_running_loop()

        def on_sigint() -> None:
            # First Ctrl-C: hang up properly (user.hangup, disconnect). A second one falls
            # back to the default handler, which interrupts whatever is still running.
            nonlocal interrupted
            interrupted = True
            loop.remove_signal_handler(signal.SIGINT)
            session.hangup()

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, on_sigint)  # Unix, main thread only
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
