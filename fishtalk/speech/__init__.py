"""Offline speech: text to speech and speech to text with models that ship in packages.

A layer of its own between the engine and core (the engine, workbench and sim use it):

* :mod:`~fishtalk.speech.pcm`: mono int16 audio, WAV decoding, resampling.
* :mod:`~fishtalk.speech.tts`: espeak-ng, an argv list, no shell.
* :mod:`~fishtalk.speech.stt`: pocketsphinx 5 (the ``speech`` extra): grammar, free
  decoding and alignment.
* :mod:`~fishtalk.speech.recognition`: the result, with its method and confidence.

Nothing is downloaded, nothing reaches the network. Importing this package loads neither
pocketsphinx nor espeak-ng; a missing one raises
:class:`~fishtalk.core.errors.SpeechUnavailableError` when first needed.
"""

from fishtalk.speech.recognition import Method, Recognition, normalize

__all__ = ["Method", "Recognition", "normalize"]
