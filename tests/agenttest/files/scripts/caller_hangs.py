"""A caller that never answers (its timeout kills it)."""

import time

time.sleep(3600)
