"""What tests and benchmarks share (virtual audio, sim clients, a scripted session).

Out of the wheel: nothing in fishtalk imports it, and nothing here imports pytest (the
fixtures live under ``tests/``). Benchmarks reach it through ``bench/support``.
"""
