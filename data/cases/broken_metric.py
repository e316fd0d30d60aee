"""A deliberately broken scorer for the docs: each branch breaks the contract differently.

The fixed version is exact_match.py.
"""


def score(input, output, expected=None):
    want = expected["label"]
    if output == want:
        return 1.0  # forgot the side information
    if output.lower() == want:
        return "0.5", {"feedback": "Right label, wrong case."}  # the score is a string
    return 0.0, f"Expected {want!r}, got {output!r}."  # the side information is not a dict
