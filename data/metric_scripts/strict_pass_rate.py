"""A user's custom Harbor metric: share of trials where every reward key is 1 (null fails).

Also reports the mean of the first key, so the output has two named numbers.
"""

import argparse
import json
from pathlib import Path


def main(input_path: Path, output_path: Path) -> None:
    rows = [json.loads(line) for line in input_path.read_text().splitlines() if line.strip()]
    passed = sum(1 for r in rows if r and all(v == 1 for v in r.values()))
    output_path.write_text(json.dumps({"strict_pass_rate": passed / len(rows) if rows else 0.0}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-i", "--input-path", type=Path, required=True)
    parser.add_argument("-o", "--output-path", type=Path, required=True)
    args = parser.parse_args()
    main(args.input_path, args.output_path)
