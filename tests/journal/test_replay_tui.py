"""``fishtalk replay`` in the TUI: the journal's conversation plays into the real app."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from fishtalk.core import conversation as conv
from fishtalk.engine.journal.reader import read_journal, summarize_journal
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.replay import REPLAY_KEYS, ReplayApp
from fishtalk.tui.screens.help import HelpScreen
from fishtalk.tui.widgets.latency import Badges
from fishtalk.tui.widgets.tools import ToolPanel
from fishtalk.tui.widgets.transcript import Transcript, render_segment
from fishtalk.workbench.journal.replay import states
from fishtalk.workbench.journal.replay_session import ReplaySession

FIXTURE = Path(__file__).parent / "data" / "everything.jsonl"


async def test_replay_ends_with_the_transcript_and_tool_cards_of_the_session() -> None:
    journal = read_journal(FIXTURE)
    session = ReplaySession(journal, speed=0)
    app = FishtalkApp(
        session, title="replay", clock=lambda: 10.0, live_timers=False, ended_linger=None
    )
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(400):
            await pilot.pause()
            if app.finished is not None and app.drawn_state is session.state:
                break
            await pilot.pause(0.01)
        assert session.finished
        assert app.drawn_state is session.state
        final = [s for _, s, _ in states(journal)][-1]
        transcript = app.query_one(Transcript)
        expected = transcript_of(final)
        assert transcript.plain_items() == expected
        items = "\n".join(transcript.plain_items())
        assert "hello journal" in items
        assert "Hello from the journal test." in items
        panel = app.query_one(ToolPanel)
        calls = [t.call_id for t in summarize_journal(journal).tools]
        assert [v.card.call_id for v in panel.card_views] == calls
        assert all(not v.running for v in panel.card_views)


async def test_hanging_up_stops_the_replay() -> None:
    journal = read_journal(FIXTURE)
    session = ReplaySession(journal, speed=0.001)  # a thousand times slower than live
    app = FishtalkApp(
        session, title="replay", clock=lambda: 10.0, live_timers=False, ended_linger=None
    )
    async with app.run_test(size=(120, 40)) as pilot:
        session.hangup()
        for _ in range(400):
            await pilot.pause()
            if app.finished is not None:
                break
            await pilot.pause(0.01)
        assert app.finished is not None
        assert not session.finished
        assert session.state.ended


# --- the replay keys: pause, step, seek, speed -------------------------------------------


class FakeClock:
    """A wall clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def replay_app(session: ReplaySession) -> ReplayApp:
    return ReplayApp(
        session, title="replay", clock=lambda: 10.0, live_timers=False, ended_linger=None
    )


async def wait_for(pilot: Pilot[int], condition: Callable[[], bool], what: str) -> None:
    """Let the app run until ``condition`` holds (bounded)."""
    for _ in range(500):
        await pilot.pause()
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def drawn(app: ReplayApp, session: ReplaySession) -> bool:
    return app.drawn_state is session.state


def shown_transcript(app: ReplayApp) -> list[str]:
    return app.query_one(Transcript).plain_items()


def transcript_of(state: conv.State) -> list[str]:
    """The segments as the transcript shows them, each agent turn with its latency badge."""
    badges = Badges()
    badges.update(state.latency)
    marks = badges.by_segment
    return [render_segment(seg, badge=marks.get(seg.segment_id)).plain for seg in state.transcript]


def stretched(tmp_path: Path, factor: float) -> Path:
    """The fixture journal with its session clock slowed ``factor`` times (a long call)."""
    out = tmp_path / "stretched.jsonl"
    lines = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if isinstance(record.get("t"), int | float):
            record["t"] = record["t"] * factor
        lines.append(json.dumps(record))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def reached(journal_states: list[tuple[float, conv.State]], seconds: float) -> int:
    """How many states the recording had gone through ``seconds`` after its start."""
    start = journal_states[0][0]
    return len([t for t, _ in journal_states if t <= start + seconds])


def state_at(journal_states: list[tuple[float, conv.State]], seconds: float) -> conv.State:
    """The state the recording had reached ``seconds`` after its start."""
    count = reached(journal_states, seconds)
    return journal_states[count - 1][1] if count else conv.initial_state()


async def test_space_pauses_the_play_head_and_plays_on() -> None:
    clock = FakeClock()
    session = ReplaySession(read_journal(FIXTURE), speed=1.0, clock=clock)
    app = replay_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: session.shown >= 1, "the first state")
        # Playing: the play head moves with the wall clock.
        before = session.position
        clock.now += 0.1
        assert session.position > before
        await pilot.press("space")
        await wait_for(pilot, lambda: session.parked, "the playback to park")
        assert session.paused
        assert "paused" in app.replay_status_text
        position, shown, status = session.position, session.shown, app.replay_status_text
        # Paused: a minute of wall clock moves nothing, and nothing is scheduled.
        clock.now += 60.0
        assert session.position == position
        assert session.shown == shown
        app.show_replay_status()
        assert app.replay_status_text == status
        assert session.parked
        await pilot.press("space")
        await wait_for(pilot, lambda: session.shown > shown, "the playback to go on")
        assert not session.paused
        assert "paused" not in app.replay_status_text
        session.hangup()
        await wait_for(pilot, lambda: app.finished is not None, "the end")


async def test_n_steps_exactly_to_the_next_turn() -> None:
    journal = read_journal(FIXTURE)
    recorded = [(t, s) for t, s, _ in states(journal)]
    session = ReplaySession(journal, speed=1.0, clock=FakeClock())
    session.toggle_pause()  # start paused: nothing shown yet
    app = replay_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: session.parked, "the playback to park")
        assert shown_transcript(app) == []
        # The states where a new segment (a user or agent turn) starts.
        turns = [
            (index, t, s)
            for index, ((t, s), (_, before)) in enumerate(
                zip(recorded, [(0.0, conv.initial_state()), *recorded], strict=False)
            )
            if len(s.transcript) > len(before.transcript)
        ]
        assert len(turns) == 3
        for count, (index, t, turn) in enumerate(turns, start=1):
            await pilot.press("n")
            await wait_for(pilot, lambda: drawn(app, session), "the step to be drawn")
            assert session.shown == index + 1
            assert len(shown_transcript(app)) == count
            assert shown_transcript(app) == transcript_of(turn)
            assert session.position == pytest.approx(t - recorded[0][0])
            assert session.paused
        roles = [seg.role for seg in turns[-1][2].transcript]
        assert roles == ["user", "agent", "agent"]
        # No turn left: n changes nothing.
        last = session.state
        await pilot.press("n")
        await pilot.pause()
        assert session.state is last
        session.hangup()
        await wait_for(pilot, lambda: app.finished is not None, "the end")


async def test_left_and_right_seek_ten_seconds_back_and_forward(tmp_path: Path) -> None:
    journal = read_journal(stretched(tmp_path, 20.0))
    recorded = [(t, s) for t, s, _ in states(journal)]
    # Stretching the clock changes nothing but the pace.
    original = [(t, s) for t, s, _ in states(read_journal(FIXTURE))]
    assert transcript_of(recorded[-1][1]) == transcript_of(original[-1][1])
    session = ReplaySession(journal, speed=1.0, clock=FakeClock())
    session.toggle_pause()
    app = replay_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: session.parked, "the playback to park")
        seen: list[list[str]] = []
        tools: list[int] = []
        for key, target in [("right", 10.0), ("right", 20.0), ("left", 10.0), ("left", 0.0)]:
            await pilot.press(key)
            await wait_for(pilot, lambda: drawn(app, session), f"the seek to {target}")
            assert session.position == pytest.approx(target)
            expected = transcript_of(state_at(recorded, target))
            assert shown_transcript(app) == expected
            assert session.shown == reached(recorded, target)
            seen.append(expected)
            cards = [card.call_id for card in state_at(recorded, target).tools]
            panel = app.query_one(ToolPanel)
            assert [v.card.call_id for v in panel.card_views] == cards
            tools.append(len(cards))
            assert f"0:{int(target):02d} / " in app.replay_status_text
        # The four stops show different conversations: 10 s has the user and the agent's
        # first turn, 20 s also the agent's second; back at 10 s the second is gone again.
        assert [len(items) for items in seen] == [2, 3, 2, 1]
        assert seen[0] == seen[2]
        assert tools == [0, 2, 0, 0]  # the cards went with the turn that called the tools
        session.hangup()
        await wait_for(pilot, lambda: app.finished is not None, "the end")


async def test_minus_and_plus_change_the_speed_and_the_scheduled_waits() -> None:
    journal = read_journal(FIXTURE)
    times = [t for t, _, _ in states(journal)]
    session = ReplaySession(journal, speed=1.0, clock=FakeClock())  # frozen wall clock
    session.toggle_pause()
    app = replay_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: session.parked, "the playback to park")
        assert app.replay_status_text.endswith("· 1x")
        for key, speed in [("plus", 2.0), ("plus", 4.0), ("plus", 8.0), ("plus", 8.0)]:
            await pilot.press(key)
            assert session.speed == speed
            assert app.replay_status_text.endswith(f"· {speed:g}x")
        for key, speed in [("minus", 4.0), ("minus", 2.0), ("minus", 1.0), ("minus", 0.5)]:
            await pilot.press(key)
            assert session.speed == speed
        await pilot.press("minus")
        assert session.speed == 0.5
        assert app.replay_status_text.endswith("· 0.5x")

        async def play_one_wait(speed_keys: list[str]) -> tuple[float, float]:
            """Play on at a speed until one wait is scheduled; the wait and its gap."""
            for key in speed_keys:
                await pilot.press(key)
            shown = session.shown
            scheduled = len(session.scheduled)
            await pilot.press("space")
            await wait_for(pilot, lambda: len(session.scheduled) > scheduled, "a wait")
            await pilot.press("space")
            await wait_for(pilot, lambda: session.parked, "the playback to park")
            # The frozen clock keeps the play head on the last state shown; the first
            # wait covers the gap from it to the next state recorded later.
            last = times[shown - 1]
            gap = next(t for t in times[shown:] if t > last) - last
            return session.scheduled[scheduled], gap

        await pilot.press("n")  # to the user's turn; the next states are 0.22 s away
        await wait_for(pilot, lambda: drawn(app, session), "the step")
        wait, gap = await play_one_wait(["plus", "plus", "plus"])  # 0.5 -> 4x
        assert session.speed == 4.0
        assert gap > 0.1
        assert wait == pytest.approx(gap / 4.0)
        wait, gap = await play_one_wait(["minus"])  # 2x: the same gap, twice the wait
        assert session.speed == 2.0
        assert wait == pytest.approx(gap / 2.0)
        session.hangup()
        await wait_for(pilot, lambda: app.finished is not None, "the end")


async def test_the_help_screen_and_footer_list_the_replay_keys() -> None:
    session = ReplaySession(read_journal(FIXTURE), speed=1.0, clock=FakeClock())
    session.toggle_pause()
    app = replay_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: session.parked, "the playback to park")
        footer = {b.binding.description for b in app.active_bindings.values() if b.binding.show}
        assert {"Pause", "Next turn", "Seek", "Speed"} <= footer
        assert not {"Interrupt", "Mute", "Spoken/text"} & footer
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        table = app.screen.query_one("#help-table", Static).content
        console = Console(record=True, width=100)
        console.print(table)
        text = console.export_text()
        for key, what in REPLAY_KEYS:
            assert key in text
            assert what in text
        # On the help screen Space does not pause or play.
        await pilot.press("space")
        assert session.paused
        await pilot.press("escape")
        session.hangup()
        await wait_for(pilot, lambda: app.finished is not None, "the end")


def test_fishtalk_replay_on_a_terminal_has_the_playback_keys(tmp_path: Path) -> None:
    """The command itself: on a terminal it opens the replay app; Space pauses it (the top
    bar says so) and Ctrl+X stops the playback."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "HOME": str(tmp_path), "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fishtalk", "replay", str(FIXTURE), "--speed", "0.01"],
        stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
    )  # fmt: skip
    os.close(slave)
    shown = b""

    def until(needle: bytes) -> None:
        nonlocal shown
        deadline = time.monotonic() + 60
        while needle not in shown:
            assert time.monotonic() < deadline, f"no {needle!r} on the terminal"
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the process closed the terminal
                    break
                shown += chunk
        assert needle in shown, f"no {needle!r} on the terminal"

    try:
        until(b"0.01x")
        until(b"Next turn")  # the footer lists the replay's keys
        os.write(master, b" ")
        until("⏸ paused".encode())
        os.write(master, b"n")
        until(b"hello journal")
        os.write(master, b"\x18")  # Ctrl+X: stop the playback
        until(b"Replay stopped")
        os.write(master, b"q")
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            select.select([master], [], [], 0.1)
            with contextlib.suppress(OSError):
                os.read(master, 65536)
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


async def test_n_steps_while_playing_and_playing_goes_on_from_there() -> None:
    journal = read_journal(FIXTURE)
    recorded = [(t, s) for t, s, _ in states(journal)]
    session = ReplaySession(journal, speed=0.01, clock=FakeClock())  # 100 times slower
    app = replay_app(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: session.shown >= 1, "the first state")
        assert len(session.state.transcript) == 1
        planned = len(session.scheduled)
        await pilot.press("n")  # the agent's first turn, 20 s away at this speed
        await wait_for(pilot, lambda: drawn(app, session), "the step")
        assert not session.paused
        assert [seg.role for seg in session.state.transcript] == ["user", "agent"]
        assert shown_transcript(app) == transcript_of(recorded[session.shown - 1][1])
        # Still playing: the next wait is planned from the new place.
        step_at = recorded[session.shown - 1][0]
        later = next(t for t, _ in recorded[session.shown :] if t > step_at)
        # (A short wait may already have run out and the next one been planned on a slow
        # machine: look for it among the waits planned since the step.)
        await wait_for(
            pilot,
            lambda: pytest.approx((later - step_at) / 0.01) in session.scheduled[planned:],
            "the wait from the new place",
        )
        session.hangup()
        await wait_for(pilot, lambda: app.finished is not None, "the end")
