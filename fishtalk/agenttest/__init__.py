"""``fishtalk test``: black-box regression tests of an agent, written in TOML.

:mod:`~fishtalk.agenttest.spec` is the file format, :mod:`~fishtalk.agenttest.runner`
runs files through :class:`fishtalk.AgentSession` (against a deployed agent or the built-in
simulator) and :mod:`~fishtalk.agenttest.report` writes plain, JUnit and JSON reports.
"""
