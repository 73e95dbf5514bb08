"""The one exception type the CLI turns into a one-line cause and a non-zero exit."""


class PublisherError(Exception):
    """A failure with a message fit for an operator: one line, names the source, no secrets."""
