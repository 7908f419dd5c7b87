"""What tests and benchmarks share with the product: fakes that need no network or devices.

Nothing here imports pytest; installed code never imports this package.
"""
