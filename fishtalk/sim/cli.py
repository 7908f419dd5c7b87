"""``fishtalk sim serve``: the simulator in the foreground until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import TextIO

from fishtalk.errors import EXIT_OK, EXIT_USAGE, FishtalkError

DEFAULT_PORT = 7880
"""The port ``sim serve`` listens on unless told otherwise (LiveKit's usual dev port)."""


class SimServeError(FishtalkError):
    """The simulator could not start (port taken, address not available)."""

    exit_code = EXIT_USAGE


def _banner(api_url: str, dev_key: str, scenario: str, out: TextIO) -> None:
    lines = [
        f"fishtalk sim: serving on {api_url} (scenario: {scenario})",
        f"  API URL:  {api_url}",
        f"  API key:  {dev_key}   (the simulator's own key; it guards nothing real)",
        "",
        "Connect with:",
        f"  FISH_API_KEY={dev_key} fishtalk chat --api-url {api_url} --agent demo",
        "Any agent id plays the scenario; reserved ids such as err-503 or transport-webrtc",
        "inject errors (listed in fishtalk/sim/fish/endpoint.py). Press Ctrl-C to stop.",
    ]
    out.write("\n".join(lines) + "\n")
    out.flush()


async def _serve(host: str, port: int, scenario: str | None, out: TextIO) -> None:
    from fishtalk.sim import run_sim
    from fishtalk.sim.fish.scenario import load_scenario

    # Load first so that a bad file fails before anything listens.
    chosen = load_scenario(scenario) if scenario is not None else None
    label = scenario if scenario is not None else "demo for agent id 'demo', else converse"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on this platform
            loop.add_signal_handler(sig, stop.set)
    try:
        async with run_sim(chosen, host=host, port=port) as sim:
            _banner(sim.api_url, sim.dev_key, label, out)
            await stop.wait()
            out.write("fishtalk sim: stopping\n")
            out.flush()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SimServeError(f"cannot listen on {host}:{port}: {reason}") from None


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    scenario: str | Path | None = None,
    out: TextIO | None = None,
) -> int:
    """Run server, session endpoint and agents until SIGINT/SIGTERM; return the exit code.

    ``scenario`` is a TOML file or a built-in name (``demo``, ``converse``). Raises
    :class:`~fishtalk.errors.FishtalkError` (one line) for a bad scenario or address.
    """
    stream = out if out is not None else sys.stdout
    # A second Ctrl-C while stopping lands here as KeyboardInterrupt: still a clean exit.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(host, port, None if scenario is None else str(scenario), stream))
    return EXIT_OK


__all__ = ["DEFAULT_PORT", "SimServeError", "serve"]
