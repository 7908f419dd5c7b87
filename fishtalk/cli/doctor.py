"""``fishtalk doctor``: everything fishtalk needs, checked one thing at a time.

:func:`run_checks` yields one :class:`Check` per line (ok, warn or fail, with the fix), as
each finishes, so a slow one (the microphone level, ``--online``) shows progress. Nothing
here prints or exits: the CLI renders the checks and picks the exit code.

Offline by default: the API key is only checked for presence and shape. With
``online=True`` a session is created with it and ended at once.
"""

from __future__ import annotations

import enum
import math
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from fishtalk.cli.settings import Settings


class Status(enum.Enum):
    """How one check went."""

    OK = "ok"
    WARN = "warn"
    """Works, or works in part (text-only, a feature missing); the fix makes it better."""
    FAIL = "fail"
    """fishtalk cannot work like this; the fix is needed."""


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the doctor's report."""

    name: str
    status: Status
    detail: str
    fix: str = ""


SILENT_DBFS: Final = -60.0
"""A microphone whose peak stays below this is taken as silent (muted, no permission)."""

KEY_RELEASE_TERMINALS: Final = {
    "kitty": "kitty",
    "wezterm": "WezTerm",
    "ghostty": "Ghostty",
    "foot": "foot",
    "alacritty": "Alacritty",
    "iterm.app": "iTerm2",
    "rio": "Rio",
}
"""Terminals known to offer the kitty keyboard protocol (key release events), by
``TERM_PROGRAM`` or ``TERM``."""


def run_checks(
    *,
    config_path: Path | None = None,
    online: bool = False,
    mic_seconds: float = 2.0,
    environ: Mapping[str, str] | None = None,
    profile: str | None = None,
) -> Iterator[Check]:
    """Every check, in order. ``config_path`` as ``--config``; ``profile`` an agent profile
    to check with (its key mode, agent and session); ``environ`` for the terminal check
    (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    settings, check = check_config(config_path, profile=profile)
    yield check
    if settings is not None:
        yield check_api_key(settings, online=online)
        yield check_agent(settings)
        if online:
            yield check_online(settings)
    yield from check_audio(settings, mic_seconds=mic_seconds)
    yield check_network()
    yield from check_terminal(env)


# --- config and key -------------------------------------------------------------------------


def check_config(
    config_path: Path | None, *, profile: str | None = None
) -> tuple[Settings | None, Check]:
    """The config loads (file, environment, the agent profile if one is named); where it
    lives."""
    from fishtalk.cli.config import load_settings
    from fishtalk.core.errors import ConfigError
    from fishtalk.engine import paths

    path = config_path if config_path is not None else paths.config_file()
    try:
        settings = load_settings(config_path, profile=profile)
    except ConfigError as exc:
        return None, Check(
            "config", Status.FAIL, str(exc), f"edit {path} (`fishtalk config show` re-checks it)"
        )
    if path.exists():
        using = f", agent profile {profile!r}" if profile is not None else ""
        return settings, Check("config", Status.OK, f"{path} is valid{using}")
    return settings, Check(
        "config",
        Status.OK,
        f"no file at {path}: defaults and environment",
        "`fishtalk config init` writes a documented one",
    )


_KEY_SHAPE: Final = re.compile(r"[A-Za-z0-9_\-.:]{16,256}")


def check_api_key(settings: Settings, *, online: bool = False) -> Check:
    """Present and well formed (never shown); or public mode with an origin. ``online``:
    the online check follows, so the line says that one tells whether the key works."""
    api = settings.api
    if api.public:
        if not api.origin:
            return Check(
                "api key",
                Status.FAIL,
                "public mode without an origin",
                "set api.origin (or --origin URL) to one of the agent's allowed origins",
            )
        return Check("api key", Status.OK, f"not needed: public agent, origin {api.origin}")
    if api.api_key is None:
        return Check(
            "api key",
            Status.WARN,
            "no API key: `fishtalk chat` cannot create sessions (`fishtalk demo` needs none)",
            "set FISH_API_KEY (or api.api_key in the config), or use a public agent",
        )
    key = api.api_key.get_secret_value()
    if key != key.strip() or any(c.isspace() for c in key):
        return Check(
            "api key",
            Status.FAIL,
            "the key contains spaces or line breaks (a copy-paste slip?)",
            "set it again without surrounding spaces or quotes",
        )
    if not _KEY_SHAPE.fullmatch(key):
        return Check(
            "api key",
            Status.WARN,
            f"present, but an unusual shape ({len(key)} characters)",
            "compare it with the key on your Fish Audio account page",
        )
    checked = "the online check below uses it" if online else "not checked online"
    return Check("api key", Status.OK, f"present ({len(key)} characters; {checked})")


def check_agent(settings: Settings) -> Check:
    """An agent to talk to: session.agent_id or profiles."""
    agents = sorted(settings.agents)
    if settings.session.agent_id:
        return Check("agent", Status.OK, f"session.agent_id = {settings.session.agent_id}")
    if agents:
        return Check("agent", Status.OK, f"profiles: {', '.join(agents)}")
    return Check(
        "agent",
        Status.WARN,
        "no default agent and no profiles",
        "pass --agent ID, set session.agent_id, or declare [agents.NAME] profiles",
    )


def check_online(settings: Settings) -> Check:
    """Create a session with the key and end it at once."""
    import asyncio

    from fishtalk.cli.launch import session_client, session_request
    from fishtalk.core.errors import FishtalkError

    async def roundtrip() -> str:
        async with session_client(settings) as client:
            grant = await client.create_session(session_request(settings))
            await client.end_session(grant.session_id)
            return grant.session_id

    try:
        session_id = asyncio.run(roundtrip())
    except FishtalkError as exc:
        return Check("online", Status.FAIL, str(exc), "check the key, the agent id and api.url")
    except Exception as exc:
        return Check("online", Status.FAIL, f"{type(exc).__name__}: {exc}", "retry with --debug")
    return Check("online", Status.OK, f"created and ended session {session_id}")


# --- audio ------------------------------------------------------------------------------------


def _portaudio_fix() -> str:
    if sys.platform.startswith("linux"):
        return "install PortAudio (Debian/Ubuntu: apt install libportaudio2)"
    return "reinstall sounddevice (its wheels ship PortAudio): pip install -U sounddevice"


def check_audio(settings: Settings | None, *, mic_seconds: float = 2.0) -> Iterator[Check]:
    """PortAudio's version, the devices and their rates, and the microphone's level."""
    from fishtalk.core.errors import AudioDeviceError
    from fishtalk.engine.audio.devices import (
        AudioUnavailable,
        import_sounddevice,
        list_devices,
        probe_format,
        resolve_device,
    )

    try:
        sd = import_sounddevice()
    except AudioUnavailable as exc:
        yield Check("portaudio", Status.WARN, str(exc), _portaudio_fix())
        return
    try:
        version = str(sd.get_portaudio_version()[1])
    except Exception:
        version = "unknown version"
    yield Check("portaudio", Status.OK, f"{version} (sounddevice {sd.__version__})")
    audio = settings.audio if settings is not None else None
    if audio is not None and not audio.enabled:
        yield Check("audio", Status.OK, "disabled in the config (audio.enabled = false)")
        return
    devices = list_devices()
    if not devices:
        yield Check(
            "devices",
            Status.WARN,
            "no audio devices found: chat is text-only",
            "connect a headset, or check that the sound server runs (and may be reached)",
        )
        return
    ins = sum(1 for d in devices if d.usable_for("input"))
    outs = sum(1 for d in devices if d.usable_for("output"))
    yield Check("devices", Status.OK, f"{ins} input, {outs} output (`fishtalk devices`)")
    mic: int | None = None
    for kind in ("input", "output"):
        spec = None if audio is None else getattr(audio, f"{kind}_device")
        label = "microphone" if kind == "input" else "speaker"
        try:
            index = resolve_device(spec, kind, devices=devices)
            fmt = probe_format(index, kind)
        except AudioDeviceError as exc:
            yield Check(
                label,
                Status.FAIL,
                str(exc),
                f"pick another with --{kind}-device (`fishtalk devices`)",
            )
            continue
        name = _device_name(devices, index, kind)
        detail = f"{name}: {fmt.samplerate} Hz, {fmt.channels} channel{'s' * (fmt.channels > 1)}"
        note = "" if fmt.samplerate == 48_000 else " (resampled to 48 kHz)"
        yield Check(label, Status.OK, detail + note)
        if kind == "input":
            mic = -2 if index is None else index  # -2: the default, it opened
    if mic is not None and mic_seconds > 0:
        yield check_mic_level(None if mic == -2 else mic, seconds=mic_seconds)


def _device_name(devices: list[Any], index: int | None, kind: str) -> str:
    for d in devices:
        if (index is None and getattr(d, f"is_default_{kind}")) or d.index == index:
            return f"{d.name!r}" + (" (default)" if index is None else "")
    return "default"


def check_mic_level(device: int | None, *, seconds: float = 2.0) -> Check:
    """Record ``seconds`` from the microphone and report its peak level."""
    from fishtalk.engine.audio.devices import import_sounddevice, probe_format

    try:
        sd = import_sounddevice()
        fmt = probe_format(device, "input")
        frames = max(1, int(seconds * fmt.samplerate))
        data: Any = sd.rec(
            frames, samplerate=fmt.samplerate, channels=fmt.channels, dtype="int16", device=device
        )
        sd.wait()
    except Exception as exc:
        return Check(
            "mic level", Status.FAIL, f"could not record: {exc}", "close other apps using the mic"
        )
    peak = int(abs(data.astype("int32")).max()) if data.size else 0
    dbfs = 20 * math.log10(peak / 32768) if peak else -math.inf
    shown = "silence (digital zero)" if peak == 0 else f"peak {dbfs:.0f} dBFS"
    if dbfs < SILENT_DBFS:
        return Check(
            "mic level",
            Status.WARN,
            f"{shown} over {seconds:g} s: the microphone hears nothing",
            "unmute it, allow this terminal to use it (macOS: Privacy > Microphone), "
            "or pick another with --input-device",
        )
    return Check("mic level", Status.OK, f"{shown} over {seconds:g} s")


# --- network and terminal ---------------------------------------------------------------------


def check_network() -> Check:
    """The WebRTC precondition: a non-loopback IPv4 interface."""
    from fishtalk.cli.demo import has_webrtc_network

    if has_webrtc_network():
        return Check("network", Status.OK, "a non-loopback interface for WebRTC")
    return Check(
        "network",
        Status.FAIL,
        "no network interface but loopback: WebRTC cannot connect",
        "connect to a network (inside a sandbox: python -m fishtalk.sim.netns -- fishtalk ...)",
    )


def check_terminal(environ: Mapping[str, str]) -> Iterator[Check]:
    """Colours (from the environment) and key-release reporting (not probed: that needs
    the terminal's answer to a query, which a non-interactive check cannot wait for)."""
    tty = sys.stdout.isatty() and sys.stdin.isatty()
    term = environ.get("TERM", "")
    colorterm = environ.get("COLORTERM", "").lower()
    if environ.get("NO_COLOR"):
        colours = "none (NO_COLOR is set)"
    elif colorterm in ("truecolor", "24bit"):
        colours = "24-bit"
    elif "256color" in term:
        colours = "256"
    elif sys.platform == "win32" and environ.get("WT_SESSION"):
        colours = "24-bit (Windows Terminal)"
    elif term in ("", "dumb"):
        colours = "none"
    else:
        colours = "16"
    where = f"TERM={term or 'unset'}"
    if tty:
        yield Check("terminal", Status.OK, f"colours: {colours} ({where})")
    else:
        yield Check(
            "terminal",
            Status.WARN,
            f"not a terminal: `fishtalk chat` uses line mode; colours: {colours} ({where})",
            "run in a terminal for the full-screen TUI",
        )
    program = environ.get("TERM_PROGRAM", "").lower()
    known = KEY_RELEASE_TERMINALS.get(program) or next(
        (name for key, name in KEY_RELEASE_TERMINALS.items() if key in term.lower()), None
    )
    if known is not None:
        yield Check(
            "key release",
            Status.OK,
            f"likely reported ({known} supports the kitty keyboard protocol; not probed)",
        )
    else:
        yield Check(
            "key release",
            Status.WARN,
            "unknown (it cannot be probed without taking over the terminal)",
            "push-to-talk needs a terminal with the kitty keyboard protocol "
            "(kitty, WezTerm, foot, Ghostty, iTerm2); elsewhere use toggle-to-talk",
        )


__all__ = [
    "KEY_RELEASE_TERMINALS",
    "SILENT_DBFS",
    "Check",
    "Status",
    "check_agent",
    "check_api_key",
    "check_audio",
    "check_config",
    "check_mic_level",
    "check_network",
    "check_online",
    "check_terminal",
    "run_checks",
]
