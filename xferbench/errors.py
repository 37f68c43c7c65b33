"""Errors the user can act on. The CLI prints them as one line, never a traceback."""


class XferbenchError(Exception):
    """Bad input or an unusable environment: the message says what to do."""


class VerificationError(XferbenchError):
    """The bytes did not arrive at the destination: the timing of that path is meaningless."""
