"""One error hierarchy for the whole product. Only the CLI maps these to exit codes."""

from __future__ import annotations


class KbError(Exception):
    """Base class: ``<place>: <what is wrong>. <what is allowed or what to do>``."""

    exit_code = 2

    def __init__(self, place: str, problem: str, hint: str = "") -> None:
        self.place = place
        self.problem = problem
        self.hint = hint
        super().__init__(self.line())

    def line(self) -> str:
        text = f"{self.place}: {self.problem}" if self.place else self.problem
        if self.hint:
            text += f". {self.hint}"
        return text


class InputError(KbError):
    """The user's input (facts, artifacts, options) is unusable. Exit code 2."""

    exit_code = 2

    def __init__(self, place: str, problem: str, hint: str = "", *, problems: list[str] | None = None) -> None:
        super().__init__(place, problem, hint)
        #: one line per problem, each already naming its place (JSON path, line)
        self.problems = problems or [self.line()]


class KnowledgeError(KbError):
    """A knowledge file is invalid. Exit code 1 (the installation, not the user, is at fault)."""

    exit_code = 1

    def __init__(self, place: str, problem: str, hint: str = "", *, problems: list[str] | None = None) -> None:
        super().__init__(place, problem, hint)
        self.problems = problems or [self.line()]


class UnknownCauseError(KbError):
    """A cause id that the knowledge base does not have. Exit code 2."""

    exit_code = 2
