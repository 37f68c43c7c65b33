"""Errors the user can act on. The CLI prints them as one line, never a traceback."""


def printable(text: str) -> str:
    """`text` on one line, its control characters (and anything else a terminal would not show as
    itself) written as escapes such as \\x1b: a file's name or field, or a pasted output, may hold any of
    them, and none may drive the terminal an error is printed to."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii") for c in text)


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
