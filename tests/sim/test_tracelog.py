"""The sim's opt-in trace (fishtalk/sim/tracelog.py): on only while a sim runs with
``FISHTALK_SIM_LOG`` set, and everything put back afterwards."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from fishtalk.sim import tracelog


def test_a_trace_holds_the_sims_records_and_ice_but_not_rtp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "trace.log"
    monkeypatch.setenv(tracelog.ENV, str(path))
    with tracelog.traced():
        logging.getLogger("fishtalk.sim.fish.core").debug("agent s1: joined")
        logging.getLogger("aioice.ice").info("Connection(0) ICE completed")
        logging.getLogger("aiortc.rtcrtpsender").debug("RTCRtpSender(audio) > RtpPacket")
        sdp = "RTCPeerConnection() setLocalDescription(answer)\nv=0\no=- 1 1 IN IP4 0.0.0.0"
        logging.getLogger("aiortc.rtcpeerconnection").debug(sdp)
    text = path.read_text()
    assert "fishtalk.sim.fish.core: agent s1: joined" in text
    assert "aioice.ice: Connection(0) ICE completed" in text
    assert "RtpPacket" not in text  # every packet would drown the rest
    assert "setLocalDescription(answer) [+2 lines]" in text  # an SDP would crowd it out
    assert "v=0" not in text


def test_levels_and_propagation_come_back_after_overlapping_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tracelog.ENV, str(tmp_path / "trace.log"))
    aioice, sim = logging.getLogger("aioice"), logging.getLogger("fishtalk.sim")
    before = (aioice.level, aioice.propagate, sim.level, sim.propagate, list(aioice.handlers))
    first, second = tracelog.traced(), tracelog.traced()
    first.__enter__()
    second.__enter__()
    assert aioice.propagate is False  # ICE chatter goes to the trace only
    assert sim.propagate is True  # the sim's own records still reach the caller's logging
    first.__exit__(None, None, None)  # the two sims end in either order
    assert sim.getEffectiveLevel() == logging.DEBUG  # the second is still tracing
    second.__exit__(None, None, None)
    after = (aioice.level, aioice.propagate, sim.level, sim.propagate, list(aioice.handlers))
    assert after == before


def test_unset_or_unwritable_means_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = logging.getLogger("fishtalk.sim")
    monkeypatch.delenv(tracelog.ENV, raising=False)
    before = list(sim.handlers)
    with tracelog.traced():
        assert sim.handlers == before
    monkeypatch.setenv(tracelog.ENV, str(tmp_path / "missing" / "trace.log"))
    with tracelog.traced():  # the sim still runs, untraced
        assert sim.handlers == before
