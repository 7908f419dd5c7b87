"""What developers use around a call: journal commands (export, diff, replay), ``fishtalk test``
(agenttest), and later reports and load. Drives calls through the engine and the public API.
"""
