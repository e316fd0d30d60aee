"""A REWARD_SPEC for the agent jobs in ``harbor_jobs/``: pass rate, minutes, dollars.

``metrickit report data/harbor_jobs/2025-07-14__09-00-00 --spec data/harbor_jobs_spec.py``
ranks the six agent/model pairs by it. A reference is the value that earns half marks: a
trial of 5 minutes scores 0.5 on speed, one of $1.00 scores 0.5 on cost (the job's trials
take 3-12 minutes and cost $0.10-$4). The report reads only this literal; it does not run
the file.
"""

REWARD_SPEC = {
    "weights": {"accuracy": 0.6, "speed": 0.2, "cost": 0.2},
    "accuracy": {},
    "speed": {"reference": 300_000},  # milliseconds
    "cost": {"reference": 1.0},  # US dollars
}
