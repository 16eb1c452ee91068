"""Arguments checked against a tool's input schema before sending (profile
`schema-validation`, ARGS-1).

Strategy: the model writes the arguments and the server wrote the schema; a call whose
arguments break the schema is never sent (the server would act on something it did not
promise to handle) and ends `failed` with what is wrong. The check is a real JSON Schema
validator (`jsonschema`, the dialect the schema names in `$schema`, draft 2020-12 by
default), never a hand-written subset: types, required members, enums, `const`,
`additionalProperties`, nested objects and arrays, combinators. `format` is an annotation,
as JSON Schema 2020-12 says by default: it is not asserted.

The schema is hostile input too:
- references are resolved only inside the schema itself: a `$ref` to any URL is refused,
  never fetched (jsonschema would otherwise fetch remote references, which would let a
  server make the host open connections of its choosing);
- a schema that is not a valid schema (its metaschema says so), or one whose checking
  recurses without end (`{"$ref": "#"}` on itself), cannot vouch for anything: the call is
  refused with that reason;
- errors are reported by path and validator only, shortened, never with the whole value
  (an argument may hold something the person typed).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = ["argument_problem"]

MAX_ERRORS = 3
_SHOWN = 120


@lru_cache(maxsize=1)
def _registry() -> Any:
    """A reference registry that retrieves nothing (jsonschema is imported only here, on the
    first check: a host without this profile never pays for it)."""
    import referencing
    import referencing.exceptions

    def no_remote(uri: str) -> Any:
        raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]

    return referencing.Registry(retrieve=no_remote)  # type: ignore[call-arg]


def _where(error: Any) -> str:
    path = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)
    return f"arguments{path}"


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _describe(error: Any) -> str:
    # jsonschema's message quotes the instance; only the validator and the path are named
    # with the expected value, so an argument's content is never repeated at length.
    expected = error.validator_value
    shown = "the schema" if isinstance(expected, dict) else _short(repr(expected))
    return f"{_where(error)} breaks `{error.validator}` ({shown})"


def argument_problem(schema: Any, arguments: Mapping[str, Any]) -> str | None:
    """Why `arguments` may not be sent under `schema`, or None when they satisfy it."""
    import jsonschema
    import referencing.exceptions
    from jsonschema import exceptions as schema_exceptions

    if not isinstance(schema, dict):
        return "the tool has no usable input schema"
    try:
        validator_class = jsonschema.validators.validator_for(
            schema, default=jsonschema.Draft202012Validator
        )
        validator_class.check_schema(schema)
        validator = validator_class(
            schema,
            registry=_registry(),
            format_checker=None,  # `format` is an annotation (2020-12); not asserted
        )
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    except schema_exceptions.SchemaError as exc:
        return f"the tool's input schema is not a valid JSON Schema ({_short(exc.message)})"
    except (referencing.exceptions.Unresolvable, schema_exceptions._WrappedReferencingError):
        return "the tool's input schema refers to another document, which is never fetched"
    except RecursionError:
        return "the tool's input schema cannot be checked (it refers to itself without end)"
    if not errors:
        return None
    reasons = "; ".join(_describe(e) for e in errors[:MAX_ERRORS])
    more = f" (and {len(errors) - MAX_ERRORS} more)" if len(errors) > MAX_ERRORS else ""
    return f"the arguments do not match the tool's input schema: {reasons}{more}"
