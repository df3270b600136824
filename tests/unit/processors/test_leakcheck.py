"""leakcheck: the real regex detector and message-identifier finder re-scan the transformed output."""

from __future__ import annotations

from typing import Any

import pytest
from span_items import Item, spans_for

from dictionaries import vocab
from processors.leakcheck import LeakCheck, to_output
from processors.pipeline import Note, PipelineConfig, Processor, SharedPolicy, build_processor, make_context
from schemas.errors import ProcessingError
from schemas.models import NoteIn, Patient, PersonName, Provider, Relative

SECRET = "unit-test-secret-7f3a"

PATIENT = Patient(
    id="P-1", mrn="48213377", names=(PersonName(given="Zebediah", family="Quarrington"),),
    birth_date="19800314", phones=("617-555-0143",), emails=("zq@example.com",),
    relatives=(Relative(name=PersonName(given="Ottoline", family="Farquharson"), relationship="wife"),),
)
PROVIDERS = (Provider(name=PersonName(given="Hildegard", family="Vanterpool")),)


def steps(*, redact_providers: bool = True, **transform: Any) -> tuple[Processor, Processor]:
    """transform + leakcheck; ``redact_providers`` is the pipeline's shared policy, the rest transform options."""
    config = PipelineConfig(steps=("transform", "leakcheck"), options={"transform": transform},
                            policy=SharedPolicy(redact_providers=redact_providers))
    ctx = make_context(config, SECRET, vocab.cache_dir())
    return build_processor("transform", transform, ctx), build_processor("leakcheck", {}, ctx)


@pytest.fixture(scope="module")
def tag_steps() -> tuple[Processor, Processor]:
    return steps()


def check(text: str, items: list[Item], procs: tuple[Processor, Processor], dropped: list[Item] | None = None,
          ) -> Note:
    transform, leak = procs
    n = Note(input=NoteIn(note_id="n-1", text=text, patient=PATIENT, providers=PROVIDERS),
             spans=spans_for(text, items), dropped=spans_for(text, dropped or []))
    (done,) = leak.process_batch(transform.process_batch([n]))
    return done


FULL_TEXT = ("Zebediah Quarrington (MRN 48213377) was seen on 03/14/2021 by Dr. Hildegard Vanterpool. "
             "His wife Ottoline Farquharson can be reached at 617-555-0143 or zq@example.com. "
             "DOB 03/14/1980. Mr. Quarrington reports chest pain; BP 120/80, HR 88. Lasix 40 mg daily.")
FULL_ITEMS: list[Item] = [
    ("Zebediah Quarrington", "NAME", "PATIENT"), ("48213377", "ID", "MRN"), ("03/14/2021", "DATE"),
    ("Hildegard Vanterpool", "NAME", "PROVIDER"), ("Ottoline Farquharson", "NAME", "RELATIVE"),
    ("617-555-0143", "PHONE"), ("zq@example.com", "EMAIL"), ("03/14/1980", "DATE", "BIRTHDATE"),
    ("Quarrington", "NAME", "PATIENT"),
]


@pytest.mark.parametrize("mode", ["tag", "surrogate", "dateshift"])
def test_when_note_is_fully_redacted_then_it_is_clean_in_every_mode(mode: str) -> None:
    done = check(FULL_TEXT, FULL_ITEMS, steps(mode=mode))
    assert done.leak_findings == () and done.leak is False, done.leak_findings


MISSED_CASES: list[tuple[str, str, list[Item], str, str, str]] = [
    # (id, text, spans the pipeline found, leaked substring, kind, label)
    ("surname_missed", "Zebediah Quarrington seen. Quarrington called back.",
     [("Zebediah Quarrington", "NAME", "PATIENT")], "Quarrington", "message", "NAME"),
    ("relative_missed", "Zebediah seen with Ottoline today.", [("Zebediah", "NAME", "PATIENT")], "Ottoline",
     "message", "NAME"),
    ("mrn_missed", "Zebediah, MRN 48213377, seen.", [("Zebediah", "NAME", "PATIENT")], "48213377", "message", "ID"),
    ("phone_other_format_missed", "Call Zebediah at (617) 555-0143 today.", [("Zebediah", "NAME", "PATIENT")],
     "(617) 555-0143", "message", "PHONE"),
    ("foreign_phone_shape_missed", "Zebediah's neighbour: 212-555-0187.", [("Zebediah", "NAME", "PATIENT")],
     "212-555-0187", "shape", "PHONE"),
    ("provider_missed", "Zebediah was seen by Dr. Vanterpool.", [("Zebediah", "NAME", "PATIENT")], "Vanterpool",
     "message", "NAME"),
]


@pytest.mark.parametrize(("text", "items", "leaked", "kind", "label"), [c[1:] for c in MISSED_CASES],
                         ids=[c[0] for c in MISSED_CASES])
def test_when_an_identifier_was_missed_then_note_is_flagged_at_its_output_offsets(
    tag_steps: tuple[Processor, Processor], text: str, items: list[Item], leaked: str, kind: str, label: str,
) -> None:
    done = check(text, items, tag_steps)
    assert done.leak is True
    assert done.output is not None
    start = done.output.index(leaked)
    hits = [f for f in done.leak_findings if f.kind == kind and f.label == label]
    assert any(f.out_start <= start and start + len(leaked) <= f.out_end + 1 for f in hits), done.leak_findings
    for f in hits:  # findings point into the OUTPUT, never at the tags
        assert "[" not in done.output[f.out_start:f.out_end]


def test_when_surrogates_look_like_identifiers_then_they_are_not_flagged() -> None:
    text = "Zebediah Quarrington, MRN 48213377, phone 617-555-0143, seen 03/14/2021, zq@example.com."
    items: list[Item] = [("Zebediah Quarrington", "NAME", "PATIENT"), ("48213377", "ID", "MRN"),
                         ("617-555-0143", "PHONE"), ("03/14/2021", "DATE"), ("zq@example.com", "EMAIL")]
    done = check(text, items, steps(mode="surrogate"))
    assert done.output is not None
    assert done.leak is False, done.leak_findings
    regex = build_processor("regex", {}, make_context(PipelineConfig(), SECRET, vocab.cache_dir()))
    assert {s.label for s in regex.detect(done.output)} >= {"PHONE", "DATE"}  # type: ignore[attr-defined]


def test_when_providers_are_kept_by_policy_then_they_are_not_a_leak() -> None:
    text = "Zebediah was seen by Dr. Vanterpool."
    items: list[Item] = [("Zebediah", "NAME", "PATIENT"), ("Vanterpool", "NAME", "PROVIDER")]
    done = check(text, items, steps(redact_providers=False))
    assert done.output == "[NAME] was seen by Dr. Vanterpool."
    assert done.leak is False, done.leak_findings


def test_when_years_are_kept_then_tags_and_bare_years_are_not_flagged(tag_steps: tuple[Processor, Processor]) -> None:
    done = check("Zebediah seen 03/14/2021; surgery in 2019.", [("Zebediah", "NAME"), ("03/14/2021", "DATE")],
                 tag_steps)
    assert done.output == "[NAME] seen [DATE 2021]; surgery in 2019."
    assert done.leak is False, done.leak_findings


def test_when_a_dropped_candidate_remains_then_ignore_dropped_decides() -> None:
    text = "Zebediah seen; ref 212-555-0187 noted."
    items: list[Item] = [("Zebediah", "NAME", "PATIENT")]
    dropped: list[Item] = [("212-555-0187", "PHONE")]
    assert check(text, items, steps(), dropped=dropped).leak is False
    config = PipelineConfig(steps=("transform", "leakcheck"))
    ctx = make_context(config, SECRET, vocab.cache_dir())
    strict = (build_processor("transform", {}, ctx), build_processor("leakcheck", {"ignore_dropped": False}, ctx))
    done = check(text, items, strict, dropped=dropped)
    assert [(f.kind, f.label) for f in done.leak_findings] == [("shape", "PHONE")]


def test_when_message_scan_is_off_then_only_shapes_count() -> None:
    config = PipelineConfig(steps=("transform", "leakcheck"))
    ctx = make_context(config, SECRET, vocab.cache_dir())
    procs = (build_processor("transform", {}, ctx), build_processor("leakcheck", {"message": False}, ctx))
    done = check("Zebediah Quarrington seen. Quarrington called back.", [("Zebediah Quarrington", "NAME")], procs)
    assert done.leak is False


def test_when_note_has_no_output_then_leakcheck_raises(tag_steps: tuple[Processor, Processor]) -> None:
    leak = tag_steps[1]
    assert isinstance(leak, LeakCheck)
    with pytest.raises(ProcessingError):
        leak.check(Note(input=NoteIn(note_id="n", text="x")))


def test_when_mapping_original_offsets_then_length_changes_shift_them() -> None:
    text = "ab John cd"
    (t, _) = steps()
    (done,) = t.process_batch([Note(input=NoteIn(note_id="n", text=text), spans=spans_for(text, [("John", "NAME")]))])
    assert done.output == "ab [NAME] cd"
    assert to_output(8, done.replacements) == 10 and to_output(1, done.replacements) == 1
    assert done.output[to_output(8, done.replacements):] == "cd"



COMMON_NAMED = Patient(id="P-2", names=(PersonName(given="Will", family="Brown"),))
# (id, text, spans the pipeline found, leaked words expected in the findings; [] = clean)
COMMON_WORD_CASES: list[tuple[str, str, list[Item], list[str]]] = [
    ("family_after_replaced_given", "Seen Will Brown today.", [("Will", "NAME", "PATIENT")], ["Brown"]),
    ("caps_family_after_replaced_given", "SEEN WILL BROWN TODAY.", [("WILL", "NAME", "PATIENT")], ["BROWN"]),
    ("title_case_mid_sentence", "Will discuss with Brown tomorrow.", [], ["Brown"]),
    ("after_title", "MRS. BROWN CALLED.", [], ["BROWN"]),
    ("last_comma_first", "Brown, Will seen today.", [("Will", "NAME", "PATIENT")], ["Brown"]),
    ("common_words_in_prose", "Urine is brown; we will recheck and call if worse.", [], []),
    ("common_words_in_caps_line", "PT SEEN. WILL CALL BACK. BROWN STOOL NOTED.", [], []),
]


@pytest.mark.parametrize(("text", "items", "leaked"), [c[1:] for c in COMMON_WORD_CASES],
                         ids=[c[0] for c in COMMON_WORD_CASES])
def test_when_name_parts_are_common_words_then_only_name_contexts_are_flagged(
    tag_steps: tuple[Processor, Processor], text: str, items: list[Item], leaked: list[str],
) -> None:
    transform, leak = tag_steps
    n = Note(input=NoteIn(note_id="n-2", text=text, patient=COMMON_NAMED), spans=spans_for(text, items))
    (done,) = leak.process_batch(transform.process_batch([n]))
    assert done.output is not None
    assert sorted({done.output[f.out_start:f.out_end] for f in done.leak_findings}) == leaked
    assert done.leak is bool(leaked)
