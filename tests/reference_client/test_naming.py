import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_host_conformance.reference_client.naming import exposed_names, is_valid_name

PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
RESERVED = {"read_file", "mcp_a_b"}

names = st.one_of(
    st.text(min_size=0, max_size=80),
    st.text(alphabet="ab_-", min_size=0, max_size=6),  # many collisions
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=50, max_size=70),
)
pair_sets = st.lists(st.tuples(names, names), min_size=0, max_size=25)


def test_plain_names_stay_exactly():
    result = exposed_names([("docs", "query-docs"), ("context7", "resolve-library-id")])
    assert result == {
        ("docs", "query-docs"): "mcp_docs_query-docs",
        ("context7", "resolve-library-id"): "mcp_context7_resolve-library-id",
    }


def test_collision_hashes_both_sides():
    result = exposed_names([("a_b", "c"), ("a", "b_c")])
    assert "mcp_a_b_c" not in result.values()
    assert len(set(result.values())) == 2
    assert all(name.startswith("mcp_a_b_c_") for name in result.values())


def test_disallowed_and_long_names_get_hash():
    result = exposed_names([("docs", "query docs"), ("docs", "x" * 80), ("dócs", "q")])
    for name in result.values():
        assert PATTERN.fullmatch(name) and name.startswith("mcp_")
    assert result[("docs", "query docs")].startswith("mcp_docs_query_docs_")


def test_reserved_names_are_never_taken():
    result = exposed_names([("a", "b")], reserved=RESERVED)
    assert result[("a", "b")] != "mcp_a_b"
    assert result[("a", "b")].startswith("mcp_a_b_")


def test_plain_name_crafted_to_equal_a_hash_keeps_it():
    hashed = exposed_names([("x", "y z")])[("x", "y z")]
    server, tool = "x", hashed[len("mcp_x_") :]
    result = exposed_names([("x", "y z"), (server, tool)])
    assert result[(server, tool)] == hashed
    assert result[("x", "y z")] != hashed
    assert len(set(result.values())) == 2


def test_is_valid_name_rejects_trailing_newline():
    assert not is_valid_name("mcp_a_b\n")
    assert is_valid_name("mcp_a_b")


@settings(deadline=None)
@given(pair_sets, st.randoms(use_true_random=False))
def test_any_names_are_valid_unique_and_stable(pairs, rnd: random.Random):
    result = exposed_names(pairs, reserved=RESERVED)
    assert set(result) == set(pairs)
    values = list(result.values())
    assert len(set(values)) == len(values)
    for (server, tool), name in result.items():
        assert PATTERN.fullmatch(name), name
        assert name.startswith("mcp_")
        assert name not in RESERVED
        raw = f"mcp_{server}_{tool}"
        others = [f"mcp_{s}_{t}" for s, t in set(pairs) if (s, t) != (server, tool)]
        if PATTERN.fullmatch(raw) and raw not in others and raw not in RESERVED:
            assert name == raw  # EXP-1: fine names stay exactly
    shuffled = list(pairs)
    rnd.shuffle(shuffled)
    assert exposed_names(shuffled, reserved=RESERVED) == result
