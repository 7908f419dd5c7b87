"""The full-screen Textual front end (``fishtalk chat`` on a terminal, ``fishtalk demo``).

Importing this package is cheap; :mod:`fishtalk.tui.app` pulls in textual and
:mod:`fishtalk.tui.run` the session (livekit), so the CLI imports them inside commands.
"""
