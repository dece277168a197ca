"""The CLI's error for a mistake the user can fix: printed as one line, exit code 2. Its own module,
so that a command's module raises it without importing cli.main."""


class UserError(Exception):
    """A mistake the user can fix: printed as one line, exit code 2."""
