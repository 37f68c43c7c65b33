"""Errors the user can act on. The CLI prints them as one line, never a traceback."""


class XferbenchError(Exception):
    """Bad input or an unusable environment: the message says what to do."""


class VerificationError(XferbenchError):
    """The bytes did not arrive at the destination: the timing of that path is meaningless."""


class NotSupportedHere(XferbenchError):
    """The installed framework cannot run this path (a feature its version lacks): the series is
    skipped with the reason, as a path that cannot run on a device is, not failed."""
