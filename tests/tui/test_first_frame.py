"""The session starts once the app's first frame is out: nothing it does first (a grant's
HTTP client, the livekit import) holds the first frame up."""

from __future__ import annotations

from fishtalk.core import errors
from fishtalk.engine.api import LiveKitGrant
from fishtalk.engine.session import Session
from fishtalk.tui.app import FishtalkApp


async def test_the_session_asks_for_its_grant_only_after_the_first_frame() -> None:
    asked: list[bool] = []
    app: FishtalkApp

    class Watched:
        """A grant source (fishtalk's own protocol) that notes when it is first asked."""

        async def obtain(self) -> LiveKitGrant:
            asked.append(app.first_frame.is_set())
            raise errors.FishtalkError("no grant in this test")

    session = Session(Watched())
    app = FishtalkApp(session, title="first frame", ended_linger=None)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(400):
            if session.state.ended:
                break
            await pilot.pause(0.01)
        assert asked == [True]
        assert session.state.ended
