"""Shell completion: the completers behind PROFILE, --input-device, --scenario, journal ids..."""

from pathlib import Path

from fishtalk.cli.shared import load

# --- shell completion -----------------------------------------------------------------------
# Completers run in the shell's completion subprocess: quick, quiet and never failing (a
# broken config or a machine without PortAudio completes nothing rather than an error).


def complete_profiles(incomplete: str) -> list[tuple[str, str]]:
    """Agent profile names from the config (``[agents.NAME]``), with their descriptions."""
    try:
        agents = load().agents
    except Exception:
        return []
    return [
        (name, profile.description or profile.agent_id)
        for name, profile in sorted(agents.items())
        if name.startswith(incomplete)
    ]


def _complete_devices(incomplete: str, *, want_input: bool) -> list[tuple[str, str]]:
    try:
        from fishtalk.engine.audio.devices import list_devices  # PortAudio: imported only here

        devices = list_devices()
    except Exception:
        return []
    found: list[tuple[str, str]] = []
    for device in devices:
        channels = device.max_input_channels if want_input else device.max_output_channels
        if channels <= 0:
            continue
        for word in (device.name, str(device.index)):
            if word.lower().startswith(incomplete.lower()):
                found.append((word, f"{device.hostapi}, {device.default_samplerate:g} Hz"))
    return found


def complete_input_devices(incomplete: str) -> list[tuple[str, str]]:
    """Microphones by name and index (from PortAudio)."""
    return _complete_devices(incomplete, want_input=True)


def complete_output_devices(incomplete: str) -> list[tuple[str, str]]:
    """Speakers by name and index (from PortAudio)."""
    return _complete_devices(incomplete, want_input=False)


def complete_scenarios(incomplete: str) -> list[str]:
    """Built-in scenario names (the sim's shipped TOML files) and ``.toml`` files here."""
    folder = Path(__file__).parents[1] / "sim" / "fish" / "scenarios"  # no sim import
    try:
        names = sorted(p.stem for p in folder.glob("*.toml"))
        base = Path(incomplete).parent if incomplete else Path()
        files = sorted(str(p) for p in base.glob("*.toml") if str(p).startswith(incomplete))
    except OSError:
        return []
    return [n for n in names if n.startswith(incomplete)] + files


def complete_journals(incomplete: str) -> list[tuple[str, str]]:
    """``latest`` and the journal ids in the journal folder (newest first), as `export`,
    `replay` and `diff` take them; a word that looks like a path completes ``.jsonl`` files."""
    from fishtalk.engine import paths
    from fishtalk.engine.journal import SUFFIX
    from fishtalk.engine.journal.reader import LATEST
    from fishtalk.engine.journal.writer import journal_files

    if "/" in incomplete or incomplete.startswith((".", "~")):
        typed = incomplete[: incomplete.rfind("/") + 1]  # offered as typed, "~" kept
        try:
            folder = Path(typed or ".").expanduser()
            found = sorted(typed + p.name for p in folder.glob(f"*{SUFFIX}"))
        except OSError:
            return []
        return [(name, "journal file") for name in found if name.startswith(incomplete)]
    ids = [p.stem for p in reversed(journal_files(paths.journal_dir()))]
    offered = [(LATEST, "the newest session")] if ids else []
    offered += [(stem, "journal") for stem in ids]
    return [(word, help) for word, help in offered if word.startswith(incomplete)]
