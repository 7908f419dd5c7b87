"""Fixtures for the sim tests (until the top-level conftest loads fishtalk.sim.testing)."""

from fishtalk.sim.testing import room_factory, sim_server

__all__ = ["room_factory", "sim_server"]
