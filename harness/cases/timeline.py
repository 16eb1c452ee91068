"""What the harness did with a host in a case, and when: the moments a monitor orders the
mocks' journal entries by.

Strategy: a rule such as "nothing reaches the server before its approval" or "tools/list is
not repeated once the session asks the model" is a statement about order, and the mocks'
journals record when each request arrived (`time.time()`, also in the stdio mock's own
process). So `Host` records each of its steps as a `Moment` on the same clock: when it
began and when it ended (an add, a start, a question, a stop), or when the person answered
(an approval, an acknowledgement). A monitor compares the two; nothing here reads a journal.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["APPROVING_ANSWERS", "Moment", "Timeline", "approves", "denies"]

# What a person types to approve: the suite's cases type "y"; "yes" is yes too. An answer
# that is neither one of these nor plainly a refusal (" y", "Y ") is not judged either way.
APPROVING_ANSWERS = frozenset({"y", "Y", "yes", "Yes", "YES"})


def approves(answer: str) -> bool:
    return answer in APPROVING_ANSWERS


def denies(answer: str) -> bool:
    """Plainly not yes (APR-2: an empty answer, `n`, or anything but yes)."""
    return answer.strip().lower() not in {"y", "yes"}


@dataclass(frozen=True)
class Moment:
    """One step the harness took with the host. `kind` is "add", "remove", "list", "start",
    "ask", "review", "cancel", "stop" (an interval), or "approval", "acknowledgement" (the
    instant the answer was given). `run` numbers the session (its start, questions, reviews,
    approvals and stop), -1 for the configuration commands; `text` is the server's name, the
    question, or the answer given; `accepted` is an acknowledgement's answer; `whole` is
    False for a step that ended in an error (the harness's bound, the adapter's failure):
    what did not happen in it may be the harness's doing, never evidence against a host."""

    kind: str
    began: float
    ended: float
    run: int = -1
    text: str = ""
    accepted: bool = False
    whole: bool = True


class Timeline(list[Moment]):
    """The moments of one case, in the order they began (a list, shared by a host and its
    restarted copies)."""

    @contextmanager
    def step(self, kind: str, run: int = -1, text: str = "") -> Iterator[None]:
        began = time.time()
        try:
            yield
        except BaseException:
            self.append(Moment(kind, began, time.time(), run, text, whole=False))
            raise
        self.append(Moment(kind, began, time.time(), run, text))

    def answered(self, kind: str, run: int, text: str = "", accepted: bool = False) -> None:
        now = time.time()
        self.append(Moment(kind, now, now, run, text, accepted))

    def of(self, *kinds: str) -> list[Moment]:
        return [m for m in self if m.kind in kinds]
