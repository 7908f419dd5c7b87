"""The fishtalk Textual app: one session, rendered from ``conversation.State``.

Data flows one way: the session reduces inputs and calls our listener, which only posts a
:class:`~fishtalk.tui.messages.StateChanged` message (newer ones replace queued older
ones). The handler keeps the newest snapshot and renders it at most
:attr:`FishtalkApp.RENDER_HZ` times a second; each widget compares against what it last
drew, so a streaming token re-wraps one transcript segment and nothing else. User actions
become session commands, which return at once. The session itself runs in one app-level
worker; the app never touches the room.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar, TypeVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static

from fishtalk.core.conversation import (
    END_INTERRUPTED,
    END_USER_HANGUP,
    Change,
    ErrorAdded,
    NoticeAdded,
    State,
    changes,
    initial_state,
)
from fishtalk.core.talk import NO_MIC, NO_MIC_TALK, TalkControl, TalkMode
from fishtalk.engine.audio.base import NullAudio
from fishtalk.tui import keys, screenshots
from fishtalk.tui.actions import default_key, key_label, split_keys
from fishtalk.tui.messages import CallEnded, StateChanged
from fishtalk.tui.release_keys import ANSWER_WAIT, KeyReleased, ReleaseSupport, driver_class
from fishtalk.tui.safe import visible
from fishtalk.tui.screens.approve import ApprovalScreen
from fishtalk.tui.screens.ended import CallSummary, EndedScreen
from fishtalk.tui.screens.help import HelpScreen
from fishtalk.tui.session_like import EndResultLike, SessionLike
from fishtalk.tui.widgets.inspector import Inspector
from fishtalk.tui.widgets.latency import HeardP50
from fishtalk.tui.widgets.message_input import MessageInput, to_box
from fishtalk.tui.widgets.meters import LevelMeters
from fishtalk.tui.widgets.status import AgentIndicator, ConnectionStatus, ModeFlags, SessionClock
from fishtalk.tui.widgets.tools import ToolPanel
from fishtalk.tui.widgets.transcript import Transcript

ACTIVITY_INTERVAL = 1.0
"""Seconds between two ``activity()`` calls while typing (the reducer throttles too)."""
QUIT_GRACE = 5.0
"""Seconds ``quit`` waits for a clean hang-up before leaving anyway."""

_T = TypeVar("_T")

NO_SPEAKER = "There is no audio output: replies are shown as text."

TALK_HELP = {
    "toggle": "Open the microphone; press again to close it (ends your spoken turn).",
    "push": "Hold to talk: the microphone is open while the key is down.",
}
"""The help screen's line for the talk key, by the talk mode in force."""

_CALL_ACTIONS = frozenset(
    {"interrupt", "toggle_mute", "talk", "toggle_spoken", "hangup", "help", "cycle_focus"}
)
"""Actions that only mean something while the call is on."""


class FishtalkApp(App[int]):
    """The chat screen for one session; the app's result and return code are the exit code."""

    CSS_PATH: ClassVar[str | Path | None] = "app.tcss"
    TITLE = "fishtalk"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings())
    RENDER_HZ: ClassVar[float] = 30.0
    LEVELS_HZ: ClassVar[float] = 20.0

    def __init__(
        self,
        session: SessionLike,
        *,
        title: str = "",
        keymap: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        ended_linger: float | None = 3.0,
        live_timers: bool = True,
        talk_mode: TalkMode = "always",
    ) -> None:
        """Build the app.

        ``keymap``: config ``action -> key`` overrides (validated by :func:`keys.keymap`).
        ``clock``: the session's monotonic clock (frozen in snapshot tests).
        ``ended_linger``: seconds the ended screen stays before exiting (None: until a key).
        ``live_timers``: run the 1 Hz clock and the level polling (off in snapshot tests).
        ``talk_mode``: always, toggle or push (see :mod:`fishtalk.core.talk`).
        """
        # Push-to-talk needs key releases: a driver that asks the terminal for them.
        super().__init__(driver_class=driver_class() if talk_mode == "push" else None)
        self.session = session
        self.session_title = visible(title)
        self._keymap = keys.keymap(keymap or {})
        self._talk_keys = split_keys(self._keymap.get("talk") or default_key("talk"))
        self.talk = TalkControl(session, talk_mode, key=key_label(self._talk_keys[0]))
        """The talk mode's state: whether the microphone is open and how it opens."""
        self._clock = clock
        self._ended_linger = ended_linger
        self._live_timers = live_timers
        self._state: State = session.state
        self._drawn: State | None = None
        self._dirty = False
        self._render_timer: Timer | None = None
        self._last_render = 0.0
        self._last_activity = float("-inf")
        self._announced: State = initial_state()
        """The state the last toasts were for (toasts announce what changed since)."""
        self._finished: CallEnded | None = None
        self._summary: CallSummary | None = None
        self._quitting = False
        self._interrupted = False
        self._stuck = False
        self.first_frame = threading.Event()
        """Set once the first frame is on the terminal (a launcher's slow work waits)."""
        self.renders = 0
        """How many times the state was drawn (the benchmark reads it)."""
        # The chat widgets live as long as the app; holding them avoids DOM queries per
        # frame and works whichever screen is on top (help, ended) or while closing.
        self._transcript = Transcript(id="transcript")
        self._tools = ToolPanel(id="tools")
        self._agent = AgentIndicator(id="agent-state")
        self._heard = HeardP50(id="heard-p50")
        self._connection = ConnectionStatus(id="connection")
        self._clock_view = SessionClock(id="clock")
        self._flags = ModeFlags(id="flags")
        self._meters = LevelMeters(id="meters")
        self._input = MessageInput(placeholder="Type a message and press Enter", id="input")
        self._inspector = Inspector(id="inspector")

    # --- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Top bar, transcript + tools, status bar, input, footer."""
        with Horizontal(id="topbar"):
            title = Text("fishtalk", style="bold")
            if self.session_title:
                title.append(" · ")
                title.append(self.session_title)
            yield Static(title, id="title")
            yield self._connection
            yield self._clock_view
        with Horizontal(id="main"):
            self._transcript.border_title = "transcript"
            yield self._transcript
            self._tools.border_title = "tools"
            yield self._tools
        yield self._inspector
        with Horizontal(id="statusbar"):
            with Vertical(id="status-left"):
                yield self._agent
                yield self._heard
            yield self._flags
            yield self._meters
        yield self._input
        # The palette key is listed on the help screen; the footer keeps its room for
        # the call's own keys at 80 columns.
        yield Footer(show_command_palette=False)

    def on_ready(self) -> None:
        """The first frame is on the terminal: now start the session worker (its first
        steps, a grant's HTTP client and the livekit import, would otherwise hold it up)."""
        self.first_frame.set()
        self.run_worker(
            self._run_session(),
            name="session",
            group="session",
            exclusive=True,
            exit_on_error=False,
        )

    def on_mount(self) -> None:
        """Wire the session and draw the first frame (the session starts once it is out)."""
        if self._keymap:
            self.set_keymap(self._keymap)
        self.session.add_listener(self._on_session_state)
        add_observer = getattr(self.session, "add_observer", None)
        if callable(add_observer):  # a live session: raw events for the inspector
            add_observer(self._inspector.collect)
        self._draw(self.session.state)
        self._input.focus()
        if self.talk.mode == "push":
            self.set_timer(ANSWER_WAIT, lambda: self._release_support(False))
        if self._live_timers:
            self.set_interval(1.0, self._tick)
            self.set_interval(1.0 / self.LEVELS_HZ, self.refresh_levels)

    # --- session -> UI ---------------------------------------------------------------------

    def _on_session_state(self, state: State, _events: Sequence[Change]) -> None:
        # Called by the session after every reduction: never touch widgets here.
        self.post_message(StateChanged(state))

    def on_state_changed(self, message: StateChanged) -> None:
        """Keep the newest snapshot; render now or at the next frame slot."""
        self._state = message.state
        self._dirty = True
        if self._render_timer is not None:
            return
        wait = self._last_render + 1.0 / self.RENDER_HZ - time.monotonic()
        if wait <= 0:
            self._frame()
        else:
            self._render_timer = self.set_timer(wait, self._frame)

    def _frame(self) -> None:
        self._render_timer = None
        if self._dirty:
            self._draw(self._state)

    def _draw(self, state: State) -> None:
        if not self._transcript.is_attached:
            return  # the app is closing: nothing left to draw on
        self._dirty = False
        self._drawn = state
        self._last_render = time.monotonic()
        self.renders += 1
        now = self._clock()
        self._transcript.show(state)
        self._tools.show(state.tool_log, now, ended=state.ended)
        self._agent.show(state)
        self._heard.show(state)
        self._connection.show(state)
        self._clock_view.show(state, now)
        audio = self.has_audio
        self._flags.show(state, audio=audio, mic=self.has_mic, talk=self._talk_look())
        meters = self._meters
        meters.audio = audio
        meters.muted = state.muted
        self._input.disabled = state.ended
        if state.ended:
            self._close_approvals()
        self._announce(state)

    def _announce(self, state: State) -> None:
        """Toasts for errors and notices that arrived since the last frame (errors first)."""
        added = changes(self._announced, state)
        self._announced = state
        for change in added:
            if isinstance(change, ErrorAdded):
                error = change.error
                detail = error.detail if error.detail and error.detail != error.message else ""
                message = visible(error.message + (f"\n{detail}" if detail else ""))
                self.notify(message, title="error", severity="error", markup=False)
        for change in added:
            if isinstance(change, NoticeAdded):
                text = visible(change.notice.text)
                self.notify(text, severity="information", markup=False, timeout=4)

    def _tick(self) -> None:
        """Once a second: the session clock and running tools' elapsed times."""
        now = self._clock()
        self._clock_view.show(self._state, now)
        self._tools.show(self._state.tool_log, now, ended=self._state.ended)

    @property
    def has_audio(self) -> bool:
        """Whether the session has real audio devices (else the UI says text-only)."""
        backend = self.session.audio
        if backend is None:
            return False
        return backend.has_input or not isinstance(backend, NullAudio)

    @property
    def has_mic(self) -> bool:
        """Whether there is a microphone (something to mute)."""
        backend = self.session.audio
        return backend is not None and backend.has_input

    def refresh_levels(self) -> None:
        """Poll the session's audio levels into the meters (about 20 Hz while running)."""
        meters = self._meters
        audio = self.has_audio
        if audio != meters.audio:
            meters.audio = audio
        # The devices open after the session starts, the microphone maybe last of all
        # (show() does nothing when nothing changed).
        self._flags.show(self._state, audio=audio, mic=self.has_mic, talk=self._talk_look())
        if not audio:
            return
        levels = self.session.audio_levels()
        if levels != meters.levels:
            meters.levels = levels

    async def _run_session(self) -> None:
        try:
            result = await self.session.run()
        except Exception as exc:  # any session crash becomes one line, no traceback
            self.post_message(CallEnded(exc))
            return
        self.post_message(CallEnded(result))

    def on_call_ended(self, message: CallEnded) -> None:
        """Show the ended screen (or leave at once when quitting)."""
        if self._finished is not None:
            return
        self._finished = message
        self.refresh_bindings()
        self._draw(self.session.state)
        summary = CallSummary.from_state(
            self.session.state,
            reason=None if message.error else message.reason,
            ended_well=message.ended_well,
        )
        if message.error:
            summary = _with_reason_text(summary, message.error)
        elif message.message:
            summary = _with_reason_text(summary, message.message)
        self._summary = summary
        if self._quitting:
            self._leave()
            return
        if message.error:
            self.notify(visible(message.error), title="error", severity="error", markup=False)
        self.push_screen(
            EndedScreen(summary, linger=self._ended_linger),
            callback=lambda _: self.exit(),
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Once the call is over, its keys go (the footer then shows how to leave); the
        talk key is there only in the toggle and push talk modes."""
        del parameters
        if action == "talk" and not self.talk.keyed:
            return False
        return self._finished is None or action not in _CALL_ACTIONS

    @property
    def finished(self) -> CallEnded | None:
        """The session's end, once ``run()`` returned."""
        return self._finished

    @property
    def outcome(self) -> EndResultLike | BaseException | None:
        """How the call ended, for the CLI to map to an exit code (the app picks none): the
        session's end result or the exception that stopped it; :class:`KeyboardInterrupt`
        after Ctrl+C; :class:`TimeoutError` when it never wound down; None while it runs."""
        if self._interrupted:
            return KeyboardInterrupt()
        if self._finished is not None:
            return self._finished.outcome
        if self._stuck:
            return TimeoutError("the session did not end after hanging up")
        return None

    @property
    def summary(self) -> CallSummary | None:
        """What the ended screen showed (also set when quitting), once the session ended."""
        return self._summary

    @property
    def interrupted(self) -> bool:
        """Whether the user left with Ctrl+C (the exit code is then 130)."""
        return self._interrupted

    # --- UI -> session ---------------------------------------------------------------------

    @on(MessageInput.Sent, "#input")
    def _send(self, event: MessageInput.Sent) -> None:
        # The input already cleared itself when it took this text: nothing to clear here,
        # so a line typed since then stays where it is.
        text = event.text.strip()
        if text and not self._state.ended:
            self.session.send_text(text)

    @on(Input.Changed, "#input")
    def _typing(self, event: Input.Changed) -> None:
        if not event.value or self._state.ended:
            return
        now = self._clock()
        if now - self._last_activity >= ACTIVITY_INTERVAL:
            self._last_activity = now
            self.session.activity()

    def on_approval_screen_typed_ahead(self, message: ApprovalScreen.TypedAhead) -> None:
        """Keys typed while an approval question was up belong to the message box."""
        if message.text is None:
            self._input.action_delete_left()
        else:
            self._input.type_ahead(to_box(message.text))

    def _close_approvals(self) -> None:
        """The call is over (or being hung up): no question about it stays open."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, ApprovalScreen) and screen in self.screen_stack:
                screen.pop_until_active()
                screen.dismiss(False)

    def action_interrupt(self) -> None:
        """Stop the agent talking."""
        self.session.interrupt()

    def action_toggle_mute(self) -> None:
        """Mute or unmute the microphone (there may be none to mute)."""
        if not self.has_mic:
            self.notify(NO_MIC, title="mute", severity="warning", markup=False, timeout=4)
            return
        self.session.set_muted(not self._state.muted)

    def action_talk(self) -> None:
        """The talk key went down: open (push), or open/close (toggle) the microphone."""
        if not self.has_mic:
            self.notify(NO_MIC_TALK, title="talk", severity="warning", markup=False, timeout=4)
            return
        self.talk.press()  # the status bar follows with the session's next state

    def on_key_released(self, message: KeyReleased) -> None:
        """A key came up: the talk key's release closes the microphone in push-to-talk."""
        if self._finished is not None:
            return
        # A modifier let go first leaves the bare key's release (ctrl+space -> space).
        if any(message.key in (key, key.rsplit("+", 1)[-1]) for key in self._talk_keys):
            self.talk.release()

    def on_release_support(self, message: ReleaseSupport) -> None:
        """The terminal said whether it reports key releases."""
        self._release_support(message.supported)

    def _release_support(self, supported: bool) -> None:
        if self.talk.releases is not None:
            return  # answered already (or the wait ran out first)
        notice = self.talk.releases_known(supported)
        if notice is not None:
            notify = getattr(self.session, "notice", None)
            if callable(notify):
                notify(notice)  # in the transcript and the journal too
            else:
                self.notify(notice, title="talk", markup=False, timeout=8)
            self.refresh_bindings()
            self._flags.show(
                self._state, audio=self.has_audio, mic=self.has_mic, talk=self._talk_look()
            )

    def _talk_look(self) -> str | None:
        """The microphone line of the status bar in the toggle and push modes."""
        if not self.talk.keyed:
            return None
        return self.talk.look().text

    def action_toggle_spoken(self) -> None:
        """Switch between spoken and text-only replies."""
        spoken = not self._state.spoken
        self.session.set_spoken(spoken)
        if spoken and not self.has_audio:
            self.notify(NO_SPEAKER, severity="information", markup=False, timeout=4)

    def action_hangup(self) -> None:
        """End the call; the ended screen follows when the session has wound down."""
        self._close_approvals()
        self.session.hangup()

    def action_cycle_focus(self) -> None:
        """Input -> transcript -> tools -> input."""
        self.screen.focus_next()

    def action_toggle_inspector(self) -> None:
        """Show or hide the protocol inspector (the input gets the focus back on hiding)."""
        if not self._inspector.toggle() and not self._input.disabled:
            self._input.focus()

    @property
    def inspector(self) -> Inspector:
        """The protocol inspector pane."""
        return self._inspector

    def action_help(self) -> None:
        """Show the keys (only from the chat screen)."""
        if not isinstance(self.screen, HelpScreen | EndedScreen):
            extra = [(self.talk.key, TALK_HELP[self.talk.effective])] if self.talk.keyed else []
            self.push_screen(HelpScreen(self._keymap, extra=extra))

    async def action_quit(self) -> None:
        """Hang up and leave as soon as the session has ended (or after a grace period)."""
        if self._finished is not None:
            self._leave()
            return
        if self._quitting:
            return
        self._quitting = True
        self.session.hangup(END_INTERRUPTED if self._interrupted else END_USER_HANGUP)
        self.set_timer(QUIT_GRACE, self._leave)

    async def action_abort(self) -> None:
        """Ctrl+C: hang up cleanly and exit with 130, as the line mode does.

        Once the call is over there is nothing to interrupt: it just leaves. A second
        Ctrl+C while the hang-up is still under way leaves at once.
        """
        if self._finished is not None:
            self._leave()
            return
        if self._interrupted:
            self._leave()
            return
        self._interrupted = True
        await self.action_quit()

    def _leave(self) -> None:
        if not self._interrupted and self._finished is None:
            self._stuck = True  # the session never wound down within the grace period
        self.exit()

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Every chat action in the command palette, plus Textual's own."""
        for spec in keys.ACTIONS:
            if spec.id in ("focus", "abort"):  # Tab and Ctrl+C mean nothing by name
                continue
            if spec.id == "talk" and not self.talk.keyed:
                continue
            yield SystemCommand(spec.description, spec.help, _runner(self, spec.action))
        yield SystemCommand(
            "Focus transcript", "Move focus to the transcript.", self._focus("#transcript")
        )
        yield SystemCommand("Focus tools", "Move focus to the tool panel.", self._focus("#tools"))
        yield SystemCommand(
            "Focus input", "Move focus to the message input.", self._focus("#input")
        )
        for command in super().get_system_commands(screen):
            if command.title not in ("Quit", "Keys"):
                yield command

    def deliver_screenshot(
        self,
        filename: str | None = None,
        path: str | None = None,
        time_format: str | None = None,
    ) -> str | None:
        """Save an SVG of the screen in a folder that exists, and say where (see
        :func:`fishtalk.tui.screenshots.deliver`)."""
        return screenshots.deliver(self, filename, path, time_format)

    def _focus(self, selector: str) -> Callable[[], None]:
        def focus() -> None:
            self.query_one(selector).focus()

        return focus

    # --- introspection (tests, benchmark) --------------------------------------------------

    @property
    def drawn_state(self) -> State | None:
        """The snapshot the widgets show right now."""
        return self._drawn

    def force_render(self) -> None:
        """Draw the newest snapshot now (tests and the benchmark)."""
        if self._render_timer is not None:
            self._render_timer.stop()
            self._render_timer = None
        self._draw(self._state)


def _runner(app: App[int], action: str) -> Callable[[], object]:
    async def run() -> None:
        await app.run_action(action)

    return run


def _with_reason_text(summary: CallSummary, text: str) -> CallSummary:
    from dataclasses import replace

    return replace(summary, reason_text=text)


__all__ = ["FishtalkApp"]
