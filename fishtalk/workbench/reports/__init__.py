"""Reports people look at: one self-contained HTML page for a session, one for a test run.

:mod:`.session` builds the session page from a journal (and its ``--record-audio`` file),
:mod:`.testrun` the page of a ``fishtalk test`` run. Both go through :mod:`.page`, which
escapes every remote string and fences the page with a Content-Security-Policy that allows
no network request and no script but the page's own.
"""
