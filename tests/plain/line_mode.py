"""``fishtalk chat`` in line mode as a real process against the sim: the one way the
line-mode tests start it (the environment, the arguments, the bounded wait)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

from support.child import finish, start_fishtalk

from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle

NO_CONFIG_HOME = "/nonexistent-fishtalk-test"

QUIET = parse_scenario(
    """
    name = "quiet"
    then = "converse"
    [agent]
    greeting = ""
    voice = "tones"
    """,
    name="quiet",
)
"""An agent that answers each turn and says nothing of its own (no greeting)."""


def chat_env(
    sim: SimHandle, *, key: bool = True, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """This process's environment with the sim's dev key (``key``), no user config (unless
    ``extra`` names one), then ``extra``."""
    env = dict(os.environ)
    env.pop("FISH_API_KEY", None)
    env.pop("FISHTALK_CONFIG", None)
    if key:
        env["FISH_API_KEY"] = sim.dev_key
    env["XDG_CONFIG_HOME"] = NO_CONFIG_HOME
    env.update(extra or {})
    return env


async def start_chat(
    sim: SimHandle, *args: str, env: Mapping[str, str]
) -> asyncio.subprocess.Process:
    """``fishtalk chat ARGS --api-url SIM`` with every standard stream piped."""
    return await start_fishtalk("chat", *args, "--api-url", sim.api_url, env=env)


async def run_chat(
    sim: SimHandle, stdin: bytes, *args: str, key: bool = True, within: float = 60
) -> tuple[int, str, str]:
    """Run ``fishtalk chat ARGS`` with ``stdin`` to its end: exit code, stdout, stderr."""
    proc = await start_chat(sim, *args, env=chat_env(sim, key=key))
    return await finish(proc, stdin, within=within)
