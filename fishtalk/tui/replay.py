"""The app for ``fishtalk replay``: the chat screen, read-only, with playback keys.

Space pauses and plays on, ``n`` jumps to the next turn, Left/Right seek 10 seconds back or
forward, ``-``/``+`` step the speed through 0.5x to 8x. The top bar shows where the play
head is, the speed, and whether it is paused. The session is anything with the
:class:`ReplayControls` surface (:class:`fishtalk.workbench.journal.replay_session.ReplaySession`).
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from textual.binding import Binding, BindingType
from textual.widgets import Static

from fishtalk.core.conversation import State
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.screens.help import HelpScreen
from fishtalk.tui.session_like import SessionLike

REPLAY_KEYS: tuple[tuple[str, str], ...] = (
    ("Space", "Pause or play on."),
    ("n", "Jump to the next turn."),
    ("← →", "Seek 10 seconds back or forward."),
    ("- +", "Slower or faster (0.5x to 8x)."),
)
"""The replay's keys, for the help screen."""

_REPLAY_ACTIONS = frozenset({"replay_pause", "replay_step", "replay_seek", "replay_speed"})
_LIVE_ONLY = frozenset({"interrupt", "toggle_mute", "toggle_spoken"})
"""Actions that mean nothing in a recording (hidden from the footer)."""


class ReplayControls(SessionLike, Protocol):
    """What the replay keys drive (besides the ordinary session surface)."""

    paused: bool
    speed: float
    finished: bool

    @property
    def position(self) -> float:
        """Seconds after the start of the recording."""
        ...

    @property
    def duration(self) -> float:
        """Seconds the recording lasts."""
        ...

    @property
    def now(self) -> float:
        """The play head on the recorded session clock."""
        ...

    def toggle_pause(self) -> None:
        """Pause or play on."""
        ...

    def step(self) -> bool:
        """Jump to the next turn."""
        ...

    def seek(self, seconds: float) -> None:
        """Move the play head by ``seconds``."""
        ...

    def faster(self) -> None:
        """Speed up."""
        ...

    def slower(self) -> None:
        """Slow down."""
        ...


def _mmss(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def replay_status(session: ReplayControls) -> str:
    """The top bar's line: paused or playing, the play head, the length, the speed."""
    mark = "⏸ paused" if session.paused else ("■ ended" if session.finished else "▶")
    speed = f"{session.speed:g}x" if session.speed > 0 else "all at once"
    return f"{mark} {_mmss(session.position)} / {_mmss(session.duration)} · {speed}"


class ReplayApp(FishtalkApp):
    """:class:`FishtalkApp` on a replayed journal: read-only, with playback keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *FishtalkApp.BINDINGS,
        Binding("space", "replay_pause", "Pause", priority=True),
        Binding("n", "replay_step", "Next turn", priority=True),
        Binding("left", "replay_seek(-10)", "Seek", key_display="←→", priority=True),
        Binding("right", "replay_seek(10)", "Seek", show=False, priority=True),
        Binding("minus", "replay_speed(-1)", "Speed", key_display="-+", priority=True),
        Binding("plus,equals_sign", "replay_speed(1)", "Speed", show=False, priority=True),
    ]
    STATUS_HZ: ClassVar[float] = 4.0

    def __init__(self, session: ReplayControls, **kwargs: object) -> None:
        # The session clock is the recording's: where the play head is.
        kwargs.setdefault("clock", lambda: session.now)
        super().__init__(session, **kwargs)  # type: ignore[arg-type]  # kwargs: FishtalkApp's options
        self.replay: ReplayControls = session
        self._replay_status = Static("", id="replay-status", markup=False)
        self.replay_status_text = ""
        """What the top bar's replay status shows."""

    def on_mount(self) -> None:
        """The status line goes into the top bar, before the connection."""
        self.query_one("#topbar").mount(self._replay_status, before="#connection")
        self._input.disabled = True
        self._input.placeholder = "A replay is read-only"
        self.show_replay_status()
        if self._live_timers:
            self.set_interval(1.0 / self.STATUS_HZ, self.show_replay_status)

    def _draw(self, state: State) -> None:
        super()._draw(state)
        self._input.disabled = True  # a recording takes no typing
        self.show_replay_status()

    def show_replay_status(self) -> None:
        """Redraw the play head, speed and paused state."""
        text = replay_status(self.replay)
        if text != self.replay_status_text:
            self.replay_status_text = text
            self._replay_status.update(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Live-only keys are hidden; the replay keys work on the chat screen while playing."""
        if action in _LIVE_ONLY:
            return False
        if action in _REPLAY_ACTIONS:
            return (
                self.finished is None
                and not self.replay.finished
                and self.screen_stack[-1] is self.screen_stack[0]
            )
        return super().check_action(action, parameters)

    def action_help(self) -> None:
        """The keys, with the replay's own."""
        if len(self.screen_stack) == 1:
            self.push_screen(HelpScreen(self._keymap, extra=REPLAY_KEYS))

    def action_replay_pause(self) -> None:
        """Space: pause or play on."""
        self.replay.toggle_pause()
        self.show_replay_status()

    def action_replay_step(self) -> None:
        """n: the next turn."""
        self.replay.step()
        self.show_replay_status()

    def action_replay_seek(self, seconds: float) -> None:
        """Left/Right: seek. Back in time, the transcript and the cards start again from
        the state the replay rebuilt (widgets only ever follow a state forward)."""
        self.replay.seek(float(seconds))
        if seconds < 0:
            state = self.replay.state
            self._transcript.restart()
            self._tools.restart()
            # Errors and notices up to here were toasted already.
            self._seen_error = state.errors[-1] if state.errors else None
            self._seen_notice = state.notices[-1] if state.notices else None
            self._draw(state)
        self.show_replay_status()

    def action_replay_speed(self, direction: int) -> None:
        """-/+: slower or faster."""
        if direction > 0:
            self.replay.faster()
        else:
            self.replay.slower()
        self.show_replay_status()


__all__ = ["REPLAY_KEYS", "ReplayApp", "ReplayControls", "replay_status"]
