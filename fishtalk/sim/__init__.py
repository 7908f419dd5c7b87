"""fishtalk's offline stand-in for Fish Audio: a loopback LiveKit server, the session
endpoint and a simulated agent, runnable in-process.

Two halves: :mod:`fishtalk.sim.livekit` speaks the LiveKit protocol (signalling, media,
rooms, the server) and knows nothing of Fish; :mod:`fishtalk.sim.fish` is the Fish stand-in
on top of it (the session endpoint, the agent, scenarios, voice). :mod:`fishtalk.sim.netns`
runs a command in a private network namespace; :mod:`fishtalk.sim.cli` is ``sim serve``.
:mod:`fishtalk.sim.openlive` stands in for the other transport, an OpenLive server (one
WebSocket, no LiveKit): ``sim serve --openlive``.

The runner that puts the halves together in-process is :mod:`fishtalk.sim.runner`.

This package's ``__init__`` imports nothing; livekit loads when the sim starts.
WebRTC needs a non-loopback interface: tests run under ``python -m fishtalk.sim.netns``.
"""
