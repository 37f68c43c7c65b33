"""Errors the user can act on. The CLI prints them as one line, never a traceback."""


class XferbenchError(Exception):
    """Bad input or an unusable environment: the message says what to do."""


class VerificationError(XferbenchError):
    """The bytes did not arrive at the destination: the timing of that path is meaningless."""


class NotSupportedHere(XferbenchError):
    """The installed framework cannot run this path (a feature its version lacks): the series is
    skipped with the reason, as a path that cannot run on a device is, not failed."""


def stop_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or kill an error was raised while handling, if any: the save that marks a stopped run's
    file interrupted can fail too, and a figure a stop left half drawn can fail to close, and the exit
    status is still the stop's."""
    cause = error.__context__
    while cause is not None and not isinstance(cause, KeyboardInterrupt):
        cause = cause.__context__
    return cause
