"""Prints the names of its environment (to show no API key reaches a caller or judge)."""

import json
import os

print(json.dumps({"verdict": "pass", "reason": " ".join(sorted(os.environ))}))
