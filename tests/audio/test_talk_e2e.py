"""Talk modes end to end, judged from the agent's side.

The real TUI (driven by Textual's pilot) on the real Session, a real virtual microphone
(PulseAudio, through PortAudio) fed one long 440 Hz tone, and the simulated agent
listening on the other side of the loopback LiveKit server. The tone plays the whole time;
only the talk key decides when the agent hears it:

* the agent's speech detector hears sound only after each opening and no longer than the
  microphone was open (so nothing flowed before it opened or after it closed: a leak would
  lengthen what it heard, and sound going on after the close would never end the turn);
* the agent receives ``user.activity`` each time the microphone opens;
* the agent sees the microphone track muted while it is closed (livekit's track mute, as
  the web SDK's ``setMicMuted`` does).

Needs the network namespace and PulseAudio::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/audio/test_talk_e2e.py
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest
from audio_signals import tone
from livekit import rtc
from support.virtual_audio import MIC, SPEAKER, VirtualAudio
from textual.pilot import Pilot

from fishtalk.cli.config import load_settings
from fishtalk.cli.launch import build_session
from fishtalk.core.conversation import Segment, State
from fishtalk.core.talk import NO_RELEASE
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.engine.session import Session
from fishtalk.sim.fish.agent import SimAgent
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.release_keys import ANSWER_WAIT, KeyReleased, ReleaseSupport

pytestmark = [pytest.mark.webrtc, pytest.mark.audio, pytest.mark.timeout(120)]

WAIT = 20.0
OPEN_FOR = 1.5
"""Seconds the microphone stays open each time."""
TOLERANCE = 0.3
"""How much longer than the open time the agent may hear (the speech detector's frames)."""
MIN_HEARD = 0.5
"""The least the agent must hear of each opening."""

# It listens and never speaks: its voice through the speaker would make the echo canceller
# duck the microphone now and then, which is not what these tests are about.
_LISTENER = parse_scenario(
    """
    then = "listen"
    [agent]
    greeting = ""
    voice = "tones"
    idle_seconds = 0
    """,
    name="listener",
)

_HEARD = re.compile(r"heard (\d+(?:\.\d+)?) s of sound")


@dataclass
class Call:
    """The call under test: the app (with its pilot), the session and the sim agent."""

    app: FishtalkApp
    pilot: Pilot[int]
    session: Session
    agent: SimAgent
    vaudio: VirtualAudio
    changes: list[tuple[float, bool]]
    """When the session's microphone opened (False) and closed (True), on its clock."""

    def changed_at(self, *, muted: bool) -> float:
        """When the microphone last became ``muted`` (the key's effect, not its press)."""
        for at, value in reversed(self.changes):
            if value == muted:
                return at
        pytest.fail(f"the microphone never became muted={muted}")

    async def until(self, what: str, predicate: Callable[[], bool], within: float = WAIT) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not predicate():
            if loop.time() > deadline:
                pytest.fail(f"timed out waiting for {what}; state: {self.session.state}")
            await self.pilot.pause(0.02)

    def activities(self) -> int:
        """``user.activity`` events the agent has received so far."""
        return self.agent.journal.count("received user.activity")

    def mic_muted(self) -> bool | None:
        """The user's microphone publication's muted flag, as the agent's room sees it."""
        for participant in self.agent.room.remote_participants.values():
            for publication in participant.track_publications.values():
                if publication.kind == rtc.TrackKind.KIND_AUDIO:
                    return publication.muted
        return None

    def sound_segments(self) -> list[Segment]:
        """Every user segment the agent transcribed from the microphone."""
        return [s for s in self.session.state.transcript if s.role == "user" and "sound" in s.text]

    @staticmethod
    def length(segment: Segment) -> float:
        """How long a finished stretch of sound was, as the agent said."""
        match = _HEARD.search(segment.text) if _is_heard(segment) else None
        assert match is not None, segment.text
        return float(match.group(1))

    def turn_over(self, before: int, closed: float) -> bool:
        """Whether the agent has finalised what it heard since ``before`` segments, with
        the last final after the close (nothing of it still open)."""
        new = self.sound_segments()[before:]
        return bool(new) and all(_is_heard(s) for s in new) and new[-1].updated_at >= closed


def _is_heard(segment: Segment) -> bool:
    return segment.role == "user" and segment.final and "mostly around" in segment.text


@contextlib.asynccontextmanager
async def _call(
    vaudio: VirtualAudio, mode: str, *, releases: bool | None = None
) -> AsyncIterator[Call]:
    """A TUI call in ``mode``; ``releases``: what the terminal's driver answers about key
    releases as soon as the app runs (as a real driver does), ``None``: no answer."""
    async with run_sim(scenarios={"listener": _LISTENER}) as sim:
        settings = load_settings(
            env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
            overrides={
                "api.url": sim.api_url,
                "api.api_key": sim.dev_key,
                "session.agent_id": "listener",
                "audio.input_device": MIC,
                "audio.output_device": SPEAKER,
                "audio.talk_mode": mode,
                # A steady tone is what noise suppression and gain control learn away.
                "audio.noise_suppression": False,
                "audio.auto_gain": False,
            },
        )
        session = build_session(settings)
        app = FishtalkApp(
            session, talk_mode=settings.audio.talk_mode, ended_linger=None, live_timers=False
        )
        feeder: subprocess.Popen[bytes] | None = None
        async with app.run_test(size=(120, 30)) as pilot:
            if releases is not None:
                # Before anything slow: the app's fallback timer runs from its start.
                app.post_message(ReleaseSupport(releases))
            try:
                agent = await _agent(sim)
                changes: list[tuple[float, bool]] = []

                def record(state: State, _events: object) -> None:
                    if not changes or changes[-1][1] != state.muted:
                        changes.append((time.monotonic(), state.muted))

                session.add_listener(record)
                call = Call(app, pilot, session, agent, vaudio, changes)
                await call.until(
                    "the call",
                    lambda: session.state.status == "connected" and session.state.agent_ready,
                )
                await agent.wait_note("listening to", within=WAIT)
                await call.until("the mic track", lambda: call.mic_muted() is not None)
                feeder = vaudio.feed_mic(tone(440, 30.0, amplitude=0.3).tobytes())
                yield call
            finally:
                if feeder is not None:
                    feeder.terminate()
                    await asyncio.to_thread(feeder.wait, 10)
                session.hangup()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WAIT):
                        while app.finished is None:  # the app has seen the end
                            await pilot.pause(0.05)
                await pilot.pause()


async def _agent(sim: SimHandle) -> SimAgent:
    async with asyncio.timeout(WAIT):
        while not sim.endpoint.sessions:  # noqa: ASYNC110 - the sim offers no event for it
            await asyncio.sleep(0.05)
    return await sim.agent(next(iter(sim.endpoint.sessions)))


async def _talk_twice(
    call: Call, open_mic: Callable[[], Awaitable[None]], close_mic: Callable[[], Awaitable[None]]
) -> None:
    """Open the mic for OPEN_FOR seconds, twice, while the tone plays throughout."""
    # The mic is closed and the tone already playing: give it time to reach the mic, so a
    # leak while closed would show as a longer first stretch.
    await call.until("the closed mic, from the agent", lambda: call.mic_muted() is True)
    await asyncio.sleep(1.0)
    for turn in (1, 2):
        assert call.activities() == turn - 1
        before = len(call.sound_segments())
        await open_mic()
        await call.until("the open mic", lambda: not call.session.state.muted)
        opened = call.changed_at(muted=False)
        await call.until("user.activity at the agent", lambda turn=turn: call.activities() == turn)
        await call.until("the open mic, from the agent", lambda: call.mic_muted() is False)
        await asyncio.sleep(max(0.0, OPEN_FOR - (time.monotonic() - opened)))
        await close_mic()
        await call.until("the closed mic", lambda: call.session.state.muted)
        closed = call.changed_at(muted=True)
        # Closing ends the turn: the agent hears the end of the sound at once, although
        # the tone goes on (the final transcript of what it heard arrives).
        await call.until("the end of the turn", lambda b=before, c=closed: call.turn_over(b, c))
        await call.until("the closed mic, from the agent", lambda: call.mic_muted() is True)
        # What the agent heard of this opening (one stretch; two if a stall on a loaded
        # machine left a gap in it): only after the mic opened, and no longer than it was
        # open (a leak before or after would add to it), and sound did flow while it was.
        new = call.sound_segments()[before:]
        heard = sum(call.length(s) for s in new)
        timing = (heard, closed - opened, [s.started_at - opened for s in new])
        assert all(s.started_at > opened for s in new), timing
        assert MIN_HEARD <= heard <= closed - opened + TOLERANCE, timing
        await asyncio.sleep(1.0)  # the tone plays on with the mic closed
    assert call.activities() == 2


async def test_toggle_opens_the_mic_with_one_key_and_closes_it_with_the_next(
    vaudio: VirtualAudio,
) -> None:
    async with _call(vaudio, "toggle") as call:
        assert "press F5 to talk" in str(call.app.query_one("#flags").render())

        async def press() -> None:
            await call.pilot.press("f5")

        await _talk_twice(call, press, press)


async def test_push_to_talk_opens_while_the_key_is_held(vaudio: VirtualAudio) -> None:
    # What the release-reporting driver posts on a kitty-protocol terminal.
    async with _call(vaudio, "push", releases=True) as call:
        await call.until("the answer", lambda: call.app.talk.releases is True)

        async def down() -> None:
            await call.pilot.press("f5")

        async def up() -> None:
            call.app.post_message(KeyReleased("f5"))

        await _talk_twice(call, down, up)


async def test_push_to_talk_without_releases_falls_back_to_toggle(vaudio: VirtualAudio) -> None:
    async with _call(vaudio, "push") as call:
        # No answer about key releases (the test driver, like a terminal without the kitty
        # protocol): after the wait, the one notice, and the key toggles.
        await call.until(
            "the fallback", lambda: call.app.talk.effective == "toggle", within=ANSWER_WAIT + WAIT
        )
        notice = NO_RELEASE.format(key="F5")
        await call.until(
            "the notice", lambda: any(n.text == notice for n in call.session.state.notices)
        )

        async def press() -> None:
            await call.pilot.press("f5")

        await _talk_twice(call, press, press)
        assert [n.text for n in call.session.state.notices].count(notice) == 1


async def test_always_on_sends_the_mic_from_the_start(vaudio: VirtualAudio) -> None:
    """The default: no key, the mic open from the start; the agent hears the tone at once
    (and, the tone going on, no end of it while it plays)."""
    async with _call(vaudio, "always") as call:
        assert call.mic_muted() is False
        await call.until(
            "the agent hearing the tone",
            lambda: any(
                s.role == "user" and "sound" in s.text for s in call.session.state.transcript
            ),
        )
        await call.pilot.press("f5")  # means nothing here
        assert not call.session.state.muted
        assert call.activities() == 0
