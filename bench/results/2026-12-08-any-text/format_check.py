"""Grammar construction of a schema with eight string formats (date-time twice, date, email, uri, ipv4, uuid, time):
asking whether a format has a language no longer copies it.

    python bench/results/2026-12-08-any-text/format_check.py LABEL   # another build first on PYTHONPATH to compare
"""

import json
import statistics
import sys
import time

import glrmask

schema = {
    "type": "object",
    "properties": {
        f"d{i}": {"type": "string", "format": f}
        for i, f in enumerate(["date-time", "date", "email", "uri", "ipv4", "uuid", "date-time", "time"])
    },
    "required": ["d0"],
}
text = json.dumps(schema)
for _ in range(3):
    glrmask.Grammar.from_json_schema(text, log_approximations=False)
ts = []
for _ in range(40):
    a = time.perf_counter()
    glrmask.Grammar.from_json_schema(text, log_approximations=False)
    ts.append(time.perf_counter() - a)
print(sys.argv[1], f"grammar construction p50 {statistics.median(ts) * 1e3:.2f} ms min {min(ts) * 1e3:.2f} ms")
