"""The loopback LiveKit-protocol server: what a real ``livekit.rtc.Room`` connects to.

* :mod:`~fishtalk.sim.livekit.server`: :class:`~fishtalk.sim.livekit.server.SimServer`, the
  aiohttp application (token minting, the participants a room holds, publishing as a
  participant);
* :mod:`~fishtalk.sim.livekit.signalling`: the ``/rtc`` websocket protocol (join, resume,
  pings, attributes, track requests);
* :mod:`~fishtalk.sim.livekit.media`: WebRTC through aiortc (data channels, track relay);
* :mod:`~fishtalk.sim.livekit.relay`: tracks, data packets and active speakers between
  participants;
* :mod:`~fishtalk.sim.livekit.cors`: CORS on the HTTP routes;
* :mod:`~fishtalk.sim.livekit.rooms`: room and participant state, free of sockets.

Nothing here knows about Fish Audio: that half lives in :mod:`fishtalk.sim.fish`.
"""
