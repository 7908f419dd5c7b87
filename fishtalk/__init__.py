"""fishtalk: a terminal voice client for Fish Audio realtime voice agents.

This module must stay light: `fishtalk --help` and `--version` import it, and they must
not pull in textual, livekit, numpy or sounddevice.
"""

__version__ = "0.1.0"
