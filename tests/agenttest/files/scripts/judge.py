"""A judge for tests: passes when the agent answered every user line; with --strict it
fails everything (a reason that names the criteria)."""

import itertools
import json
import sys

seen = json.load(sys.stdin)
roles = [line["role"] for line in seen["transcript"]]
answered = all(b == "agent" for a, b in itertools.pairwise(roles) if a == "user")
if "--strict" in sys.argv:
    print(json.dumps({"verdict": "fail", "reason": f"too strict to pass: {seen['criteria']}"}))
else:
    print(json.dumps({"verdict": "pass" if answered else "fail", "reason": f"roles {roles}"}))
