"""A caller for tests: asks one question, checks it was answered, then hangs up."""

import json
import sys

seen = json.load(sys.stdin)
if seen["turn"] == 1:
    print("What can you do?")
elif seen["transcript"][-1]["role"] == "agent":
    print(json.dumps({"hang_up": True}))
else:
    print(json.dumps({"say": "Are you there?"}))
