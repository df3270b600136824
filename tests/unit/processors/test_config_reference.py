"""README's configuration reference names every option of every step (docs that match the code)."""

from __future__ import annotations

import re

import pytest
from paths import readme_section

from processors import pipeline
from processors.pipeline import STEP_MODULES


def _reference() -> dict[str, str]:
    """The README's per-step bullets of the configuration reference: step -> its text."""
    bullets = re.split(r"\n- (?=`[a-z]+`)", readme_section("## Configuration"))
    return {m.group(1): b for b in bullets if (m := re.match(r"`([a-z]+)`", b))}


@pytest.mark.parametrize("step", sorted(STEP_MODULES))
def test_when_a_step_has_an_option_then_the_readme_reference_names_it(step: str) -> None:
    pipeline._load_step(step)
    fields = list(pipeline._CLASSES[step].Config.model_fields)
    text = _reference().get(step)
    assert text is not None, f"README's configuration reference has no bullet for step {step!r}"
    assert [f for f in fields if f"`{f}`" not in text] == []
