"""Ticket routing with feedback an optimiser can use: the same scores as weak_feedback.py,
and the feedback says what was expected, what was produced, and what in the message points
to the right label ("Expected 'billing', got 'other'. The message mentions a charge.").
"""

LABELS = ("account", "billing", "other", "shipping", "technical")

# Words in a message that point to a label, and how the feedback names them.
CLUES = {
    "billing": {"charge": "a charge", "charged": "a charge", "invoice": "an invoice",
                "refund": "a refund", "price": "a price", "subscription": "a subscription",
                "payment": "a payment", "card": "a card", "vat": "VAT"},
    "shipping": {"tracking": "tracking", "delivery": "a delivery", "parcel": "a parcel",
                 "order": "an order", "package": "a package", "shipped": "shipping",
                 "courier": "a courier"},
    "technical": {"error": "an error", "button": "a button", "upload": "an upload",
                  "crash": "a crash", "crashes": "a crash", "firefox": "a browser",
                  "api": "the API", "export": "an export", "app": "the app"},
    "account": {"account": "the account", "password": "a password", "admin": "an admin",
                "login": "a login", "email": "an email address", "workspace": "a workspace"},
}


def _clue(message, label):
    words = [w.strip(".,;:?!'\"()").lower() for w in message.split()]
    for word in words:
        if word in CLUES.get(label, {}):
            return f"The message mentions {CLUES[label][word]}."
    if label == "other":
        return "The message fits none of billing, shipping, technical or account."
    return f"Look for what makes it a {label} ticket."


def score(input, output, expected=None):
    want = expected["label"]
    if output == want:
        return 1.0, {"feedback": f"Correct: {want!r}."}
    if output not in LABELS:
        if isinstance(output, str) and output.strip().lower() == want:
            return 0.0, {"feedback": f"Expected {want!r}, got {output!r}: the right label, "
                                     f"but it must be one of {', '.join(LABELS)} exactly "
                                     "(lower case)."}
        return 0.0, {"feedback": f"Expected {want!r}, got {output!r}, which is not a label; "
                                 f"answer with one of {', '.join(LABELS)}. "
                                 + _clue(input["message"], want)}
    return 0.0, {"feedback": f"Expected {want!r}, got {output!r}. "
                             + _clue(input["message"], want)}
