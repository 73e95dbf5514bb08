"""The one exception type the CLI turns into a one-line cause and a non-zero exit."""


class PublisherError(Exception):
    """A failure with a message fit for an operator: one line, names the source, no secrets."""


def cause(exc: BaseException) -> str:
    """The one-line cause of a failure the CLI and the watch report: a file system error by its
    reason and path, anything else by its message."""
    if isinstance(exc, OSError):
        return f"{exc.strerror or type(exc).__name__}: {exc.filename or ''}".rstrip(": ")
    return str(exc)


def every_cause(problems: list[str]) -> str:
    """Every problem of a refusal on one line, each once, in the order found."""
    return "; ".join(dict.fromkeys(problems))
