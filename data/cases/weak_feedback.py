"""Ticket routing with weak feedback (the scorer page's "Wrong." and "Bad format."): the score
is right, but an optimiser that reads only the feedback learns nothing from it.

useful_feedback.py scores the same way and says what was expected and what was produced.
"""

LABELS = ("account", "billing", "other", "shipping", "technical")


def score(input, output, expected=None):
    want = expected["label"]
    if output == want:
        return 1.0, {"feedback": "Correct."}
    if output not in LABELS:
        return 0.0, {"feedback": "Bad format."}
    return 0.0, {"feedback": "Wrong."}
