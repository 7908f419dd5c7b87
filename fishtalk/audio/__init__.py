"""Audio for fishtalk: capture, playback, echo cancellation, levels, device listing.

``base`` holds the backend contract the session drives and the no-audio backend; nothing
in this package is imported by ``fishtalk --help``.
"""
