import base64
import json
from urllib.parse import quote, quote_plus

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.reference_client.redaction import _NS_TO_SEARCH_A_FORM, MARKER, Redactor

secrets = st.text(min_size=1, max_size=40)
surrounding = st.text(max_size=30)


def encodings(secret):
    raw = secret.encode("utf-8", "surrogatepass")
    b64 = base64.b64encode(raw).decode()
    url = base64.urlsafe_b64encode(raw).decode()
    return [
        secret,
        b64,
        b64.rstrip("="),
        url,
        url.rstrip("="),
        quote(secret),
        quote(secret, safe=""),
        quote_plus(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    ]


def test_plain_and_encoded_forms_are_removed():
    r = Redactor(["s3cr3t-Tok/en+=?"])
    for form in encodings("s3cr3t-Tok/en+=?"):
        out = r.redact(f"Authorization: Bearer {form} end")
        assert form not in out
        assert MARKER in out
        assert out.startswith("Authorization: Bearer ") and out.endswith(" end")


def test_secret_inside_longer_base64_any_alignment():
    secret = "canary-7f3a9b1c"
    r = Redactor([secret])
    for prefix in (b"", b"a", b"ab", b"abc"):
        blob = base64.b64encode(prefix + secret.encode() + b"tail!").decode()
        # the characters that depend only on the secret's bytes
        first = -(-len(prefix) * 8 // 6)
        last = (len(prefix) + len(secret)) * 8 // 6
        core = blob[first:last]
        out = r.redact("data:" + blob)
        assert core not in out
        assert MARKER in out


def test_secret_in_marker_does_not_come_back():
    for secret in ("secret", "removed", "[", "e", "]"):
        out = Redactor([secret]).redact(f"a {secret} b")
        assert secret not in out


def test_redact_obj():
    r = Redactor(["tok123"])
    value = {"tok123": ["x tok123", 1, {"k": "tok123"}], "n": None}
    assert "tok123" not in json.dumps(r.redact_obj(value))


def test_no_secrets_is_identity():
    assert Redactor([]).redact("anything") == "anything"
    assert Redactor([""]).redact("anything") == "anything"


@settings(deadline=None)
@given(st.lists(secrets, min_size=1, max_size=3), surrounding, surrounding)
def test_random_secrets_never_survive(secret_list, before, after):
    r = Redactor(secret_list)
    for secret in secret_list:
        for form in encodings(secret):
            out = r.redact(before + form + after)
            assert secret not in out
            assert form not in out


@settings(deadline=None)
@given(secrets, st.text(max_size=200))
def test_output_never_holds_secret(secret, text):
    out = Redactor([secret]).redact(text + secret + text)
    assert secret not in out


@given(
    st.lists(secrets, min_size=1, max_size=3),
    st.lists(st.text(max_size=60) | secrets, min_size=1, max_size=6),
)
def test_searching_before_compiling_answers_as_the_pattern_does(secret_list, texts):
    """A redactor finds its forms with `in` until that has cost as much as compiling would;
    the answer is the compiled pattern's, text by text, on either side of the switch."""
    searching = Redactor(secret_list)
    compiled = Redactor(secret_list)
    compiled._search_budget = 0  # compiles at its first text
    switching = Redactor(secret_list)
    # enough to search the first text, not the second: it compiles there
    switching._search_budget = len(switching._forms) * (_NS_TO_SEARCH_A_FORM + len(texts[0])) + 1
    for n, text in enumerate(texts):
        expected = compiled.redact(text)
        assert searching.redact(text) == expected
        assert switching.redact(text) == expected
        if n == 0:
            found = any(form in text for form in switching._forms)
            assert (switching._pattern is not None) == found
    assert compiled._pattern is not None
    assert (switching._pattern is not None) == (len(texts) > 1 or found)


def test_a_text_that_answers_in_otherwise_is_still_redacted():
    class Lying(str):
        def __contains__(self, other):
            return False

    assert Redactor(["hunter2-canary"]).redact(Lying("pw=hunter2-canary")) == f"pw={MARKER}"
