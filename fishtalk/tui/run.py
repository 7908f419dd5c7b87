"""Running a session in the full-screen app: :func:`run_app`, and the app as a tool host.

Choosing a front end, building the session and starting the demo's sim are
:mod:`fishtalk.cli.launch`'s; this module only runs the app on a session it is given.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from fishtalk.core.talk import TalkMode
    from fishtalk.engine.host import HostLink
    from fishtalk.engine.journal.writer import JournalWriter
    from fishtalk.engine.tools.registry import ApprovalRequest
    from fishtalk.tui.app import FishtalkApp
    from fishtalk.tui.session_like import EndResultLike, JournalInfo, SessionLike

KeyMap = Mapping[str, str] | None


class TuiHost:
    """The TUI as a :class:`~fishtalk.engine.host.Host`: toasts, the terminal's clipboard, and the
    approval dialog."""

    def __init__(self, app: FishtalkApp) -> None:
        self.app = app

    def notify(self, title: str, message: str) -> None:
        """A toast (remote text shown literally)."""
        from fishtalk.tui.safe import visible

        self.app.notify(visible(message), title=visible(title), markup=False)

    def copy(self, text: str) -> None:
        """Copy through the terminal (OSC 52)."""
        self.app.copy_to_clipboard(text)

    async def approve(self, request: ApprovalRequest) -> bool:
        """Ask with the approval dialog; a timeout or cancel takes the question away."""
        from fishtalk.tui.screens.approve import ApprovalScreen

        app = self.app
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def settle(value: bool | None) -> None:
            if not answer.done():
                answer.set_result(bool(value))

        screen = ApprovalScreen(request)
        app.push_screen(screen, callback=settle)
        try:
            return await answer
        finally:
            # Timed out or cancelled (which cancels ``answer`` too): take the question away.
            # (Under another screen it stays; a late y/n there is ignored.)
            unanswered = not answer.done() or answer.cancelled()
            if unanswered and app.screen is screen:
                screen.dismiss(False)


def run_app(
    session: SessionLike,
    *,
    link: HostLink | None = None,
    title: str = "",
    keymap: KeyMap = None,
    first_frame: threading.Event | None = None,
    app_type: type[FishtalkApp] | None = None,
    talk_mode: TalkMode = "always",
    journal: JournalInfo | None = None,
) -> EndResultLike | BaseException | None:
    """Run ``session`` in the full-screen TUI, bound to ``link``; return how the call ended
    (:attr:`FishtalkApp.outcome`; the CLI maps it to an exit code), None if the app never
    ran to an end. An app that crashed returns a :class:`RuntimeError`.
    ``first_frame`` is set once the app has drawn its first frame. ``app_type``: the app
    class (the replay's, say). ``journal``: the session's journal (:func:`journal_info`)."""
    from fishtalk.tui.app import FishtalkApp

    kind = app_type or FishtalkApp
    options: dict[str, object] = {"title": title, "keymap": keymap}
    if talk_mode != "always":
        options["talk_mode"] = talk_mode
    if journal is not None:
        options["journal"] = journal
    app = kind(session, **options)  # type: ignore[arg-type]
    if first_frame is not None:
        app.first_frame = first_frame
    if link is not None:
        link.bind(TuiHost(app))
    from fishtalk.engine.native import stderr_to_log

    # C libraries (PortAudio, ALSA, WebRTC) write to fd 2 on device trouble; on the drawn
    # screen that is garbage, so it goes to a log while the app runs (report_end's line
    # below reaches the real stderr again).
    with stderr_to_log("tui"):
        app.run()
    report_end(app)
    if app.return_code is None:
        return None
    if app.return_code != 0:  # Textual's own code for an app that crashed
        return RuntimeError("the app crashed")
    return app.outcome


def journal_info(writer: JournalWriter | None) -> JournalInfo | None:
    """What the app needs of the session's journal (None: no journal is written). Its
    reference is the id ``fishtalk sessions`` lists when it is in the journal folder,
    else its path; a journal that only goes to ``--events`` has none."""
    from fishtalk.engine import paths
    from fishtalk.tui.session_like import JournalInfo

    if writer is None:
        return None
    mono0, wall0 = writer.origin
    ref: str | None = None
    if writer.path is not None:
        own = writer.path.parent == paths.journal_dir()
        ref = writer.journal_id if own else str(writer.path)
    return JournalInfo(ref, mono0, wall0)


def report_end(
    app: FishtalkApp, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> None:
    """Leave one plain line on the normal screen once the app has exited.

    The full-screen summary went away with the alternate screen, so the terminal's
    scrollback says how the call went: stdout when it ended well, stderr when it failed
    or was interrupted (as the line mode does).
    """
    from fishtalk.tui.safe import visible

    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    summary = app.summary
    finished = app.finished
    if app.interrupted:
        detail = f" · {summary.stats()}" if summary and summary.connected else ""
        stderr.write(f"fishtalk: interrupted; hung up{detail}\n")
    elif summary is not None:
        out = stdout if summary.ended_well else stderr
        out.write(f"fishtalk: {summary.line()}\n")
        journal = app.journal
        if journal is not None and journal.ref is not None and summary.connected:
            # The ended screen said it too, but it is gone with the alternate screen.
            from fishtalk.tui.screens.ended import page_command

            out.write(f"fishtalk: the session as a web page: {page_command(journal.ref)}\n")
    elif finished is not None:
        text = finished.error or finished.message or finished.reason
        (stdout if finished.ended_well else stderr).write(f"fishtalk: {visible(text)}\n")
    else:
        return
    stdout.flush()
    stderr.flush()


__all__ = ["TuiHost", "journal_info", "report_end", "run_app"]
