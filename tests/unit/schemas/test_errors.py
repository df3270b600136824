"""schemas.errors: the one table of error codes, checked against the source and the README."""

from __future__ import annotations

import ast
import re

import pytest
from paths import REPO, readme_section

from schemas.errors import ERROR_CODES, ConfigError, DeidError, HL7ParseError, InputError, ProcessingError

CODE = re.compile(r"E\d{3}")


def _codes_in_source() -> dict[str, str]:
    """Every string constant shaped like an error code in the project's code -> a file that uses it."""
    found: dict[str, str] = {}
    for pkg in ("streams", "processors", "dictionaries", "schemas"):
        for path in (REPO / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value):
                    found.setdefault(node.value, str(path.relative_to(REPO)))
    return found


def test_every_code_the_code_uses_has_a_row() -> None:
    used = _codes_in_source()
    assert len(used) > 20
    missing = {code: where for code, where in used.items() if code not in ERROR_CODES}
    assert not missing


@pytest.mark.parametrize("cls", [DeidError, InputError, HL7ParseError, ConfigError, ProcessingError])
def test_every_class_default_code_is_a_row_of_that_class(cls: type[DeidError]) -> None:
    assert ERROR_CODES[cls.code].kind is cls


def test_rows_belong_to_their_class_family() -> None:
    for row in ERROR_CODES.values():
        assert issubclass(row.kind, DeidError)
        assert row.code[1] == row.kind.code[1], row  # E1xx input, E2xx HL7, E3xx config, E4xx processing


def test_when_a_code_is_not_in_the_table_then_constructing_the_error_fails() -> None:
    with pytest.raises(KeyError, match="E999"):
        InputError("no such code", code="E999")


def test_when_raised_then_message_carries_code_and_reason_without_prefix() -> None:
    err = ConfigError("unknown step 'x'", code="E301")
    assert str(err) == "[E301] unknown step 'x'" and err.reason == "unknown step 'x'" and err.code == "E301"


def test_readme_error_table_is_the_table() -> None:
    rows = dict(re.findall(r"^\| (E\d{3}) \| (.+?) \|$", readme_section("### Error codes"), re.M))
    assert rows == {code: row.meaning for code, row in ERROR_CODES.items()}
