"""Generate data/cases/tickets.jsonl: a support-ticket routing task scored for six systems.

    python data/make_cases.py            # rewrites data/cases/tickets.jsonl (seed 5)

200 tickets x 6 candidate systems = 1,200 rows. Each row is one case as a scorer sees it:
``case_id``, ``candidate``, ``input`` ({"message": ...}), ``output`` (the label the system
returned), ``expected`` ({"label": ...}), the measured ``latency_ms`` and ``cost_usd``, and
``accuracy`` (1.0 when ``output`` equals the expected label, as the exact-match scorer says).

The candidates trade accuracy against speed and cost the way real deployments do (see
``CANDIDATES``): a small fast model, two mid-size ones that come out statistically tied
under the README's REWARD_SPEC (accuracy 0.7, speed 0.2 at 2 s, cost 0.1 at $0.01), a
slower, more accurate one, a large model that reasons first, and the previous in-house
model, which the current ``base`` beats on every axis (it is off the Pareto front). Two
candidates are reached through a router and carry its prefix, as real model ids do.

Tickets differ in difficulty, and the difficulty is shared: a hard ticket is hard for every
candidate (a latent normal difficulty plus each candidate's own noise), so candidates are
compared ticket by ticket. Long messages take longer and cost more for everyone. About 2 % of
latencies and 1 % of costs were not measured (null). Only the standard library is used, so
the file is reproducible anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path
from statistics import NormalDist

LABELS = ["billing", "technical", "account", "shipping", "other"]
MESSAGES = {
    "billing": [
        "I was charged twice for my {month} invoice.",
        "Why did my subscription price go up in {month}?",
        "Please refund the {amount} charge from last week.",
        "My card was declined but the payment still shows as pending.",
    ],
    "technical": [
        "The app crashes whenever I open the {page} page.",
        "I get error {code} when I try to upload a file.",
        "Sync has been stuck at 99 % since {month}.",
        "The export button does nothing in {browser}.",
    ],
    "account": [
        "How do I change the email address on my account?",
        "I can't log in after resetting my password.",
        "Please delete my account and all my data.",
        "Can I add a second admin to our team workspace?",
    ],
    "shipping": [
        "My order from {month} still hasn't arrived.",
        "The tracking number {code} shows no updates.",
        "The parcel arrived damaged; the box was crushed.",
        "Can I change the delivery address for order {code}?",
    ],
    "other": [
        "Do you have a discount for non-profits?",
        "I'd like to give some feedback about your support team.",
        "Are you hiring in {city}?",
        "What are your opening hours on public holidays?",
    ],
}
FILLERS = {
    "month": ["January", "March", "June", "September", "November"],
    "amount": ["$12.99", "$49.00", "$120.50", "€30"],
    "page": ["settings", "reports", "billing", "profile"],
    "code": ["E1042", "X-339", "4471-2209", "ZX81"],
    "browser": ["Firefox", "Safari", "Chrome"],
    "city": ["Berlin", "Lisbon", "Toronto"],
}
# name: (accuracy, median latency ms, latency spread, median cost USD, cost spread)
CANDIDATES = {
    "mini-fast": (0.62, 380.0, 0.35, 0.00025, 0.30),
    "base": (0.84, 1250.0, 0.40, 0.0021, 0.30),
    "openrouter/anthropic/claude-haiku-4.5": (0.855, 1450.0, 0.40, 0.0025, 0.30),
    "openrouter/openai/gpt-5-mini": (0.89, 3900.0, 0.45, 0.0075, 0.35),
    "large-cot": (0.95, 7200.0, 0.45, 0.024, 0.35),
    "base-v0": (0.72, 1800.0, 0.40, 0.0030, 0.30),
}
# The two candidates tied under the README's REWARD_SPEC, and the one clearly best on
# accuracy alone and on speed alone (checked by tests/test_examples.py).
TIED = ("base", "openrouter/anthropic/claude-haiku-4.5")
MOST_ACCURATE = "large-cot"
FASTEST = "mini-fast"
# Beaten by base on accuracy, latency and cost at once: off the Pareto front.
DOMINATED = "base-v0"
NOISE = 0.8  # each candidate's own noise around the shared ticket difficulty (sd)


def make_rows(n_tickets: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    tickets = []
    for i in range(n_tickets):
        label = rng.choice(LABELS)
        template = rng.choice(MESSAGES[label])
        fill = {k: rng.choice(v) for k, v in FILLERS.items()}
        message = template.format(**fill)
        # difficulty (shared by all candidates) and a length factor for latency and cost
        tickets.append((f"t{i + 1:03d}", label, message, rng.gauss(0, 1),
                        math.exp(rng.gauss(0, 0.2))))
    scale = math.sqrt(1 + NOISE**2)
    thresholds = {c: NormalDist().inv_cdf(v[0]) * scale for c, v in CANDIDATES.items()}
    rows = []
    for case_id, label, message, difficulty, length in tickets:
        for candidate, (_, lat, lat_sd, cost, cost_sd) in CANDIDATES.items():
            if difficulty + rng.gauss(0, NOISE) < thresholds[candidate]:
                output = label
            elif rng.random() < 0.3:
                output = label.capitalize()  # right label, wrong format: still wrong
            else:
                output = rng.choice([x for x in LABELS if x != label])
            latency = round(lat * length * math.exp(rng.gauss(0, lat_sd)), 1)
            usd = round(cost * length * math.exp(rng.gauss(0, cost_sd)), 6)
            rows.append({
                "case_id": case_id,
                "candidate": candidate,
                "input": {"message": message},
                "output": output,
                "expected": {"label": label},
                "accuracy": 1.0 if output == label else 0.0,
                "latency_ms": None if rng.random() < 0.02 else latency,
                "cost_usd": None if rng.random() < 0.01 else usd,
            })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path,
                        default=Path(__file__).parent / "cases" / "tickets.jsonl")
    parser.add_argument("-n", "--tickets", type=int, default=200)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rows = make_rows(args.tickets, args.seed)
    args.output.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} rows to {args.output}")


if __name__ == "__main__":
    main()
