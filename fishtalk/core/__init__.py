"""Sans-IO core: the wire protocol, the conversation (state, inputs, reducer, effects), the one
event vocabulary, the one error tree and terminal-safe text. No asyncio, livekit, textual or
numpy (import-linter keeps it so): bytes and inputs in, state, effects and events out.
"""
