"""`fishtalk demo` draws its first frame before the simulator's heavy imports: the sim
starts behind the TUI, which says so, and the call then connects as usual."""

from __future__ import annotations

import contextlib
import json
import textwrap

import pytest
from support.child import env_without_fish, run_python

pytestmark = pytest.mark.webrtc

_PROBE = textwrap.dedent(
    """
    import asyncio, json, sys, threading
    from fishtalk.cli.config import load_settings
    from fishtalk.cli.demo import STARTING_SIM, _BackgroundSim, _DemoGrant, demo_settings
    from fishtalk.cli.launch import build_session
    from fishtalk.engine.paths import CONFIG_PATH_ENV
    from fishtalk.sim.fish.scenario import load_scenario
    from fishtalk.tui.app import FishtalkApp

    HEAVY = ("aiortc",)  # what the LiveKit-protocol server stands on
    CALL = ("livekit", "numpy", "httpx")  # what the call itself needs, once it has a grant

    def load(overrides):
        env = {CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"}
        return load_settings(env=env, overrides={**overrides, "session.text_only": True})

    report = {}

    class Watched(_BackgroundSim):
        def start(self):
            # The moment the sim's imports begin: the first frame must be out already.
            report["drawn_before_sim"] = drawn.is_set()
            report["heavy_before_sim"] = [m for m in HEAVY if m in sys.modules]
            report["call_before_sim"] = [m for m in CALL if m in sys.modules]
            report["notice_before_sim"] = [n.text for n in session.state.notices]
            return super().start()

    drawn = threading.Event()

    async def main():
        global session
        sim = Watched(load_scenario("converse"))
        settings = demo_settings(load, "http://127.0.0.1", "sim")
        session = build_session(settings, grant=_DemoGrant(sim, settings, after=drawn))
        session.notice(STARTING_SIM)
        app = FishtalkApp(session, title="demo", ended_linger=None)
        app.first_frame = drawn
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                for _ in range(600):
                    if session.state.status == "connected" and session.state.agent_ready:
                        break
                    await pilot.pause(0.05)
                report["status"] = session.state.status
                report["later_heavy"] = [m for m in HEAVY if m in sys.modules]
                session.hangup()
                for _ in range(200):
                    if session.state.ended:
                        break
                    await pilot.pause(0.05)
                report["reason"] = session.state.end_reason
        finally:
            await asyncio.to_thread(sim.stop)
        print(json.dumps(report))

    asyncio.run(main())
    from fishtalk.engine.native import exit_process
    exit_process(0)
    """
)


def test_the_demo_draws_before_the_sim_is_imported() -> None:
    env = env_without_fish()
    done = run_python(_PROBE, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["drawn_before_sim"] is True
    assert report["heavy_before_sim"] == []
    assert report["call_before_sim"] == []
    assert report["notice_before_sim"] == ["Starting the simulated agent…"]
    assert report["status"] == "connected"
    assert report["later_heavy"] == ["aiortc"]
    assert report["reason"] == "user_hangup"


def test_the_demo_holds_off_garbage_collection_until_its_first_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio
    import gc

    from fishtalk.cli import demo
    from fishtalk.cli.config import load_settings
    from fishtalk.cli.settings import Settings
    from fishtalk.core.errors import SimStartError
    from fishtalk.engine.paths import CONFIG_PATH_ENV

    seen: dict[str, bool] = {}

    def front_end(settings: object, *, grant: demo._DemoGrant, **_: object) -> int:
        # Stands in for the TUI: draws its "first frame", then the session asks for a grant.
        seen["before_frame"] = gc.isenabled()
        assert grant.after is not None
        grant.after.set()

        def no_sim() -> object:
            raise SimStartError("no sim here")

        grant.sim.start = no_sim  # type: ignore[method-assign]
        with contextlib.suppress(SimStartError):
            asyncio.run(grant.obtain())
        seen["after_frame"] = gc.isenabled()
        gc.disable()  # run_demo's own finally must enable it again
        return 0

    def load(overrides: dict[str, object]) -> Settings:
        env = {CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"}
        return load_settings(env=env, overrides={**overrides, "session.text_only": True})

    monkeypatch.setattr(demo, "run_tui", front_end)
    monkeypatch.setattr(demo, "wants_tui", lambda plain: True)
    assert gc.isenabled()
    assert demo.run_demo(load) == 0
    assert seen == {"before_frame": False, "after_frame": True}
    assert gc.isenabled()


_BEFORE_FRAME_PROBE = textwrap.dedent(
    """
    import json, sys
    from fishtalk.cli import demo
    from fishtalk.cli.config import load_settings
    from fishtalk.engine.paths import CONFIG_PATH_ENV

    def load(overrides):
        env = {CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"}
        return load_settings(env=env, overrides={**overrides, "session.text_only": True})

    report = {}

    def front_end(settings, *, grant, title, **_):
        # Stands in for the TUI at its first frame: what has been imported and built so far.
        report["title"] = title
        report["sim_imported"] = sorted(m for m in sys.modules if m.startswith("fishtalk.sim"))
        from fishtalk.core import protocol
        report["protocol_built"] = protocol.UserMessage.__pydantic_complete__
        return 0

    demo.run_tui = front_end
    demo.wants_tui = lambda plain: True
    demo.has_webrtc_network = lambda: True
    code = demo.run_demo(load)
    report["code"] = code
    print(json.dumps(report))
    """
)


def test_the_built_in_demo_is_parsed_behind_the_first_frame() -> None:
    """Nothing of the sim package (not even the scenario parser) and no protocol model's
    validator is built before the first frame of the built-in demo."""
    env = env_without_fish()
    done = run_python(_BEFORE_FRAME_PROBE, timeout=60, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {
        "title": "demo (simulated agent)",
        "sim_imported": [],
        "protocol_built": False,
        "code": 0,
    }


def test_the_background_sim_loads_a_built_in_scenario_by_name() -> None:
    """Given the built-in's name, the sim parses it on its own start and serves it."""
    from fishtalk.cli.demo import _BackgroundSim

    sim = _BackgroundSim("demo")
    try:
        info = sim.start()
        assert info.api_url.startswith("http://127.0.0.1:")
    finally:
        sim.stop()
