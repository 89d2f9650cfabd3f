"""The one exception base of pytest-glmstack.

Every error the plugin raises on purpose derives from :class:`GlmstackError`, so the pytest glue
and the ``glmstack`` command line turn any of them into a usage error or a failed test with its
message, never a traceback (as mirakuru does with its ``ExecutorError``).
"""


class GlmstackError(Exception):
    """Base of every deliberate pytest-glmstack error."""


class OptionError(GlmstackError, ValueError):
    """A command-line option or ini key has a value it cannot take."""


class CheckFailed(GlmstackError):
    """A matrix check found what the entry's expectations forbid (the test fails with this text).
    ``record`` is what the check measured, kept in the results even though it failed."""

    def __init__(self, message: str, record=None):
        super().__init__(message)
        self.record = record


class BisectError(GlmstackError):
    """Bad input to a bisection (exit status 2): the message names what was checked."""


class BuildError(GlmstackError):
    """A hybrid environment of a bisection could not be built or did not verify."""
