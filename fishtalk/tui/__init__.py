"""The full-screen Textual front end (``fishtalk chat`` on a terminal, ``fishtalk demo``).

Importing this package is cheap; :mod:`fishtalk.tui.app` pulls in textual, so the
launcher (:mod:`fishtalk.cli.launch`) imports it inside the functions that run the app. The TUI
runs a session it is given (anything shaped like :class:`~fishtalk.tui.session_like.SessionLike`)
and imports neither the simulator nor the line mode.
"""
