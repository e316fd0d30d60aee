"""User code checked against contracts and run safely: scorers, REWARD_SPEC, metric
scripts."""
