"""The host's own free-form questions to the person (opencode's `question` tool): a session
whose `ask` takes `on_question` gets the harness's callback, which records the question as
seen and answers it (the default answer, or the case's); one whose `ask` does not is never
passed it. Timeouts left to the host (None) bound its operations by its declared defaults."""

from __future__ import annotations

from mcp_host_conformance.harness.cases.hostrun import Running
from mcp_host_conformance.harness.contract.adapter import QUESTION_ANSWER, Turn, takes_questions
from tests.harness.bare_host import bare_host


class Asks:
    statuses = ()
    text = ""

    def ask(self, question, approve, acknowledge, on_question) -> Turn:
        said = on_question(f"Which file for {question!r}?")
        return Turn(question_sent=True, answer=said)


class NeverAsks:
    statuses = ()
    text = ""

    def ask(self, question, approve, acknowledge) -> Turn:
        return Turn(question_sent=True, answer="no question here")


def test_a_host_s_question_is_answered_and_recorded_as_seen(tmp_path):
    owner = bare_host(tmp_path)
    running = Running(owner, Asks(), owner.options(), 0.0)
    assert running.ask("hello").answer == QUESTION_ANSWER
    assert running.ask("again", answer_question="notes.txt").answer == "notes.txt"
    assert owner.questions == ["Which file for 'hello'?", "Which file for 'again'?"]
    assert "Which file for 'again'?" in owner.user_text()


def test_a_session_without_the_callback_is_never_passed_it(tmp_path):
    owner = bare_host(tmp_path)
    running = Running(owner, NeverAsks(), owner.options(), 0.0)
    assert running.ask("hello").answer == "no question here"
    assert takes_questions(Asks().ask) and not takes_questions(NeverAsks().ask)
    assert takes_questions(lambda q, a, b, **more: None)


def test_timeouts_left_to_the_host_are_bounded_by_its_declared_defaults(tmp_path):
    owner = bare_host(tmp_path, defaults=(12.0, 60.0))
    options = owner.options(connect_timeout=None, call_timeout=None)
    assert options.connect_timeout is None and options.call_timeout is None
    assert owner.bounded_timeouts(options) == (12.0, 60.0)
    # never below the catalog's own defaults: a host that declares less may still wait them
    assert bare_host(tmp_path, defaults=(1.0, 2.0)).bounded_timeouts(options) == (10.0, 30.0)
    assert owner.bounded_timeouts(owner.options()) == (5.0, 1.0)
