"""``fishtalk test``: black-box regression tests of an agent, written in TOML.

:mod:`.spec` is the file format, :mod:`.runner`
runs files through :class:`fishtalk.AgentSession` (against a deployed agent or the built-in
simulator) and :mod:`~fishtalk.workbench.agenttest.report` writes plain, JUnit and JSON reports.
"""
