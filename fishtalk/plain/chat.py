"""Line mode's keyboard: stdin lines become typed turns, commands and approval answers.

Each stdin line is a typed turn; lines starting with ``/`` are commands (see
:data:`HELP`). End of input waits for the agent to answer what was sent, then hangs up,
so ``printf 'hello\\n' | fishtalk chat --plain`` prints the reply and exits 0. A client
tool's approval question is asked at the prompt (:meth:`PlainChat.approve`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Final, TextIO

from fishtalk.core import conversation as conv
from fishtalk.core.talk import NO_MIC, NO_MIC_TALK, TalkControl, TalkMode
from fishtalk.plain.render import PlainRenderer, stripped

if TYPE_CHECKING:
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

EOF_SETTLE: Final = 1.5
"""After end of input: seconds the agent stays listening, the last turn answered, before
the hang-up (a reply in several lines may pause between them)."""
EOF_MAX_WAIT: Final = 60.0
"""After end of input: the longest wait for the agent's reply before hanging up anyway."""

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
                f"another approval is waiting ({stripped(request.tool_name)}); "
                f"it is asked after the {'one' if waiting == 1 else f'{waiting}'} before it",
                mark="?",
            )
        try:
            return await pending.answer
        except asyncio.CancelledError:
            if pending in self._approvals:
                name = stripped(request.tool_name)
                if self.session.state.ended:
                    self._note(f"approval for {name!r} cancelled: the session ended", mark="?")
                else:
                    self._note(f"approval for {name!r} timed out; declined", mark="?")
            raise
        finally:
            self._withdraw(pending)

    def _ask(self, request: ApprovalRequest) -> None:
        from fishtalk.engine.tools.approval import params_preview

        summary = stripped(request.summary) if request.summary else ""
        self.renderer.line(
            f"? allow client tool {stripped(request.tool_name)}{': ' + summary if summary else ''}"
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
            name = stripped(self._approvals[0].request.tool_name)
            self._note(f"still waiting: allow {name}? answer y or n", mark="?")

    def _command(self, text: str) -> None:
        session = self.session
        name, _, arg = text.partition(" ")
        arg = arg.strip().lower()
        if name == "/interrupt":
            session.interrupt()
        elif name == "/hangup":
            session.hangup()
        elif name in ("/mute", "/unmute", "/talk") and not self._has_mic():
            self._note(NO_MIC_TALK if name == "/talk" else NO_MIC)
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
            self._note(f"unknown command {stripped(text)[:40]!r}; /help lists them")

    def _has_mic(self) -> bool:
        """Whether there is a microphone to mute or talk into (as the TUI asks)."""
        backend = self.session.audio
        return backend is not None and backend.has_input

    def _note(self, text: str, *, mark: str = "*") -> None:
        for line in text.splitlines():
            self.renderer.line(f"{mark} {line}")
        self.renderer.flush()

    async def _hangup_when_answered(self) -> None:
        """End of input: hang up once the agent has answered the last typed turn and is
        listening (held for :data:`EOF_SETTLE`, so a reply in several lines is not cut
        between them). Lines that answer no turn (a tour, an idle prompt) are not waited
        for. After :data:`EOF_MAX_WAIT` it hangs up anyway, and a line it cuts says so."""
        session = self.session
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EOF_MAX_WAIT
        quiet_since: float | None = None
        changed = asyncio.Event()
        remove = session.add_listener(lambda _s, _e: changed.set())
        try:
            while not session.state.ended and loop.time() < deadline:
                now = loop.time()
                if _answered(session.state, self.renderer.last_sent_at):
                    quiet_since = quiet_since if quiet_since is not None else now
                    if now - quiet_since >= EOF_SETTLE:
                        break
                else:
                    quiet_since = None
                changed.clear()
                wait = EOF_SETTLE if quiet_since is not None else deadline - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), max(0.05, min(wait, EOF_SETTLE)))
        finally:
            remove()
        self.hang_up()

    def hang_up(self, reason: str = conv.END_USER_HANGUP) -> None:
        """Hang up (``reason``: the end reason recorded, ``interrupted`` for Ctrl-C); a line
        the agent is still saying is interrupted first, so it is printed (and journaled) as
        cut, never as if it were finished."""
        if not self.session.state.ended and _agent_line_open(self.session.state):
            self.session.interrupt()
        self.session.hangup(reason)


def _answered(state: conv.State, sent_at: float | None) -> bool:
    """Every typed turn left, the agent's reply to the last one began, and no agent line
    is being said or played now. An agent that goes on thinking on its own (a tour's next
    step) has answered: only its unprompted lines would follow.

    Cheap: it looks only at the segments since ``sent_at``, newest first."""
    if state.ended:
        return True
    if state.queued or state.status != "connected" or state.speaking_segment is not None:
        return False
    if sent_at is not None and not _agent_spoke_since(state, sent_at):
        return False
    if sent_at is None and not any(seg.role == "agent" for seg in state.segment_log):
        return False  # nothing typed: the agent's opening is what the user came to hear
    return state.agent_state != "speaking" and not _agent_line_open(state)


def _agent_line_open(state: conv.State) -> bool:
    """Whether the agent is in the middle of a line (the newest few segments: open ones
    are the newest)."""
    return any(seg.role == "agent" and seg.open for seg in islice(reversed(state.segment_log), 8))


def _agent_spoke_since(state: conv.State, at: float) -> bool:
    """Whether an agent line answers the last user turn (the reducer's one rule), looking
    back only as far as that turn's line."""
    for seg in reversed(state.segment_log):
        if seg.role == "agent" and seg.answers_turn is not None:
            return seg.started_at >= at
        if seg.role == "user" and seg.turn is not None:
            return False
    return False


class PlainHost:
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


__all__ = ["EOF_MAX_WAIT", "EOF_SETTLE", "HELP", "PlainChat", "PlainHost"]
