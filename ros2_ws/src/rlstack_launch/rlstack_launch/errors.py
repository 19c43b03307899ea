"""Error types shared by the loader, the params-file checker and the runner.

Every user-facing problem is a single line of the form
``<where>: <what is wrong> (<what to do>)`` so the CLI can print it as
``rlstack_launch: error: <line>`` and tests can match it without parsing tracebacks.
"""

from __future__ import annotations

from typing import Iterable, List


class LaunchError(Exception):
    """One or more user errors found while loading or starting a launch file.

    ``problems`` holds the one-line messages, in the order they were found.
    """

    def __init__(self, problems: Iterable[str] | str) -> None:
        if isinstance(problems, str):
            problems = [problems]
        self.problems: List[str] = list(problems)
        super().__init__("\n".join(self.problems))


class EntryError(Exception):
    """A problem in one launch-file entry; the loader adds file and line before reporting.

    Kept separate from :class:`LaunchError` because the code that detects the problem
    (a substitution, a params file) does not know where in which launch file it is.
    """

    def __init__(self, what: str, hint: str = "") -> None:
        self.what = what
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        """Return ``what (hint)``, or just ``what`` when there is no hint."""
        return f"{self.what} ({self.hint})" if self.hint else self.what


class SkipEntry(Exception):
    """Abort the current entry without a new message.

    Raised when an entry depends on something already reported (for example a required
    argument that was not given): reporting it again for every use would bury the real
    problem under follow-up noise.
    """
