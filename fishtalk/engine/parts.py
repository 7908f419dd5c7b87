"""Building the parts of a call: the tool runner, the audio factory and the journal.

The one builder both the CLI (:mod:`fishtalk.cli.launch`, from its settings) and the
public API (:class:`fishtalk.AgentSession`, from its arguments) use, so a call made either
way is put together the same way. Heavy modules load only when a part is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from fishtalk.engine.audio.base import AudioBackend
    from fishtalk.engine.audio.options import AudioOptions
    from fishtalk.engine.journal.writer import JournalWriter
    from fishtalk.engine.session import AudioFactory, Session
    from fishtalk.engine.tools.builtins import BuiltinOptions
    from fishtalk.engine.tools.declared import ToolSettings
    from fishtalk.engine.tools.registry import Approver, ToolHandler
    from fishtalk.engine.tools.runner import ToolRunner


def audio_factory(options: AudioOptions) -> AudioFactory:
    """Opens the audio backend when the session starts; a fall back to text-only (no
    devices, no PortAudio) is reported through the session's notice callback."""

    def make(notice: Callable[[str], None]) -> AudioBackend:
        from fishtalk.engine.audio import open_backend
        from fishtalk.engine.audio.base import NullAudio

        backend = open_backend(options, notice=notice)
        if isinstance(backend, NullAudio):
            notice(backend.description)
        return backend

    return make


def tool_runner(
    declared: ToolSettings | None,
    *,
    handlers: Mapping[str, ToolHandler] | None = None,
    default_timeout: float,
    approver: Approver | None = None,
    options: BuiltinOptions | None = None,
) -> ToolRunner:
    """The runner of a call's client tools: the ``declared`` ones (config tools, built-ins,
    plugins; a bad declaration raises :class:`~fishtalk.core.errors.ConfigError`), then
    ``handlers`` registered over them by name."""
    from fishtalk.engine.tools.build import build_registry
    from fishtalk.engine.tools.registry import ToolRegistry
    from fishtalk.engine.tools.runner import ToolRunner

    registry = build_registry(declared, options=options) if declared is not None else ToolRegistry()
    for name, handler in (handlers or {}).items():
        registry.register(name, handler, replace=True)
    return ToolRunner(registry, default_timeout=default_timeout, approver=approver)


def open_journal(
    session: Session,
    path: Path | None,
    *,
    agent_id: str | None,
    front_end: str,
    spoken: bool,
    echo: TextIO | None = None,
    what: str = "call",
) -> JournalWriter | None:
    """Start writing ``session``'s journal to ``path`` (and/or ``echo``); a journal that
    cannot be opened is a notice ("No journal for this ``what``"), never a failure."""
    from fishtalk.engine.journal.writer import JournalWriter

    try:
        writer = JournalWriter(
            path,
            agent_id=agent_id,
            front_end=front_end,
            spoken=spoken,
            levels=session.audio_levels,
            echo=echo,
        )
    except OSError as exc:
        session.notice(f"No journal for this {what}: {exc}")
        return None
    session.add_observer(writer.observe)
    return writer


__all__ = ["audio_factory", "open_journal", "tool_runner"]
