"""Write tests/data/harbor_sum_golden.json with a real Python >= 3.12.

Run: /path/to/python3.12 tests/data/make_harbor_golden.py
Each case is a list of ints and floats (JSON keeps the distinction) and the repr of
``sum``, ``min`` and ``max`` as that interpreter computes them.
"""

import json
import random
import sys
from pathlib import Path

assert sys.version_info >= (3, 12), "needs the compensated sum of Python >= 3.12"
rng = random.Random(20261130)
cases = []
for _ in range(2000):
    row = []
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        if r < 0.3:
            row.append(rng.choice([0, 1, -1, 2, 3, 10**15, -(10**15), 2**53]))
        elif r < 0.45:
            row.append(
                rng.choice([1e16, -1e16, 1e300, -1e300, 1.7e308, 0.1, 0.2, 0.3, -0.0, 0.0, 1.0])
            )
        else:
            row.append(rng.uniform(-1, 1) * 10 ** rng.randint(-5, 17))
    cases.append(
        {"values": row, "sum": repr(sum(row)), "min": repr(min(row)), "max": repr(max(row))}
    )
out = Path(__file__).with_name("harbor_sum_golden.json")
out.write_text(json.dumps({"python": sys.version.split()[0], "cases": cases}))
print(f"wrote {len(cases)} cases to {out}")
