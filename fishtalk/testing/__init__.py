"""What tests and benchmarks share; installed with fishtalk but never imported by it.

Nothing here imports pytest (the fixtures live under ``tests/``).
"""
