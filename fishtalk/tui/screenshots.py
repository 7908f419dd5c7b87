"""Saving a screenshot of the app where a folder exists, and saying where.

Textual's own delivery assumes ``~/Downloads`` exists; fishtalk uses it when it does, else
its state folder (created), else the current folder.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from fishtalk.tui.safe import visible


def folders() -> list[Path]:
    """Where a screenshot goes, best first: ``~/Downloads`` if it exists, fishtalk's state
    folder, the current folder."""
    import platformdirs

    found = []
    try:
        downloads = Path.home() / "Downloads"
    except RuntimeError:  # no home directory to be found
        pass
    else:
        if downloads.is_dir():
            found.append(downloads)
    found.append(platformdirs.user_state_path("fishtalk", appauthor=False) / "screenshots")
    found.append(Path.cwd())
    return found


def deliver(
    app: App[int], filename: str | None, path: str | None, time_format: str | None
) -> str | None:
    """Save an SVG of ``app``'s screen in the first folder that works (``path`` if given)
    and toast where; a toast says why when none did. Returns the file saved, or None."""
    candidates = [Path(path).expanduser()] if path else folders()
    failure = "no folder to save in"
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            saved = app.save_screenshot(filename, str(folder), time_format)
        except OSError as exc:
            failure = f"{folder}: {exc.strerror or exc}"
            continue
        app.notify(f"Saved to {visible(saved)}", title="screenshot", markup=False)
        return saved
    app.notify(
        f"The screenshot could not be saved ({visible(failure)}).",
        title="screenshot",
        severity="error",
        markup=False,
    )
    return None


__all__ = ["deliver", "folders"]
