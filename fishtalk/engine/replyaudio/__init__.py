"""Each reply's audio as the client received it (issue 29).

- :mod:`.capture`: :class:`ReplyAudio`, the agent's received frames bound to the reply
  they belong to by the one rule (:mod:`fishtalk.core.conversation.answers`), with the
  user's speech at the microphone; a session makes one when asked (``reply_audio=True``
  on :class:`fishtalk.engine.session.Session` and :class:`fishtalk.AgentSession`).

Use::

    async with AgentSession(agent_id, audio=backend, reply_audio=True) as s:
        await s.ask("Hello?")
        clip = s.reply_audio.reply(1)  # the reply to user turn 1: a ReplyClip
        pcm = clip.samples()           # int16 mono at clip.sample_rate
        times = [f.at for f in clip.frames]  # arrival of each frame, session clock
"""

from fishtalk.engine.replyaudio.capture import ReceivedFrame, ReplyAudio, ReplyClip

__all__ = ["ReceivedFrame", "ReplyAudio", "ReplyClip"]
