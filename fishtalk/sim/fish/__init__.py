"""The Fish Audio stand-in that runs on the loopback LiveKit server.

* :mod:`~fishtalk.sim.fish.endpoint`: the session API (``POST /v1/agent/sessions`` and
  friends), with reserved agent ids that inject errors (:mod:`~fishtalk.sim.fish.answers`)
  and its sessions and single-use tokens (:mod:`~fishtalk.sim.fish.sessions`);
* :mod:`~fishtalk.sim.fish.agent`: :class:`~fishtalk.sim.fish.agent.SimAgent`, the simulated
  agent that joins the room, made of a scenario interpreter
  (:mod:`~fishtalk.sim.fish.interpreter`), its speech (:mod:`~fishtalk.sim.fish.speech`),
  its listening (:mod:`~fishtalk.sim.fish.listening`) and its tools
  (:mod:`~fishtalk.sim.fish.tools`), sharing :mod:`~fishtalk.sim.fish.core`;
* :mod:`~fishtalk.sim.fish.scenario`: the scenario format and the built-in scenarios
  (``scenarios/*.toml``);
* :mod:`~fishtalk.sim.fish.voice`: locally synthesised speech (espeak-ng, or tones).
"""
