"""Tests of the loopback sim (server, endpoint, agent, scenarios)."""
