"""The one error type that means "the user gave us something we cannot use"."""


class InputError(ValueError):
    """Bad input: the CLI prints str(error) as one line and exits 2."""
