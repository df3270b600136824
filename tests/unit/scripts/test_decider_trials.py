"""scripts/decider_trials.py: the trials' code does what the table of trials says (scripts/results/QUALITY_HISTORY.md),
and leaves the shipped code as it was (the trials themselves run for minutes on the training corpora)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from paths import REPO, load_script

from dictionaries import vocab
from processors.pipeline import BuildContext, Note, build_processor
from schemas.models import NoteIn, Span

sys.path.insert(0, str(REPO / "scripts"))  # decider_trials imports decider_cv beside it
trials = load_script("decider_trials")
cv = trials.D  # decider_cv, as the trials import it


def _note(text: str, specs: list[tuple[str, str, str]]) -> Note:
    spans = [Span(start=text.index(sub), end=text.index(sub) + len(sub), label=label, source=source, score=0.9)
             for sub, label, source in specs]
    return Note(input=NoteIn(note_id="n1", text=text), spans=tuple(spans))


def test_when_the_abbreviations_trial_is_patched_in_then_abbreviations_reach_the_model_and_nothing_stays_patched(
        ) -> None:
    from processors import shapes
    from processors.decide import features

    extractor = build_processor("decide", {}, BuildContext(cache_dir=vocab.cache_dir(),
                                                           steps=("regex", "ner", "dictionary", "decide"))).extractor
    note = _note("Sat 98% on 2L, head CT Saturday in Texas, sat 98.",
                 [("Sat", "DATE", "ner"), ("CT", "LOCATION", "ner"), ("Saturday", "DATE", "ner"),
                  ("Texas", "LOCATION", "ner"), ("98", "IP", "ner")])
    shipped = extractor.split(note)[:2]
    assert shipped == ([0, 1, 2, 3, 4], [])  # the policies keep all four; the model's IP label is a shape
    with trials.abbreviations_to_model():
        # written out, the policy keeps it; abbreviated, and the IP label without an address, the model weighs
        assert extractor.split(note)[:2] == ([2, 3], [0, 1, 4])
    # each part alone: "Sat" (index 0), "CT" (1), the IP-labelled "98" (4)
    for part, scored in (("weekdays", [0]), ("states", [1]), ("ip", [4])):
        with trials.abbreviations_to_model(frozenset({part})):
            assert extractor.split(note)[1] == scored
    assert extractor.split(note)[:2] == shipped
    assert features.weekday_only.__module__ == "processors.decide.features"
    assert shapes.has_identifier_shape.__module__ == "processors.shapes"


def test_when_the_features_trial_builds_its_columns_then_each_candidate_gets_one_value_per_name() -> None:
    note = _note("Seen by SMITH, cx 2/4 bottles. SMITH aware.", [("SMITH", "NAME", "ner"), ("2/4", "DATE", "ner")])
    rows = trials.all_extra(note, [0, 1])
    assert [len(r) for r in rows] == [len(trials.EXTRA_NAMES)] * 2
    names = trials.EXTRA_NAMES
    smith, fraction = (dict(zip(names, r, strict=True)) for r in rows)
    assert smith["prev_present"] == 1 and smith["next_present"] == 1  # "by" before it, "cx" after it
    assert smith["all_same"] == 2 and smith["uncovered_same"] == 1  # the second SMITH is no candidate
    assert fraction["num_parts"] == 2 and (fraction["part1"], fraction["part2"]) == (2, 4)
    assert fraction["next_present"] == 1 and smith["num_parts"] == 0


def test_when_the_language_trial_reads_a_note_then_another_languages_function_words_raise_its_share() -> None:
    english = _note("Pt seen by SMITH, to the floor with her son.", [("SMITH", "NAME", "ner")])
    spanish = _note("Paciente que fue vista por el Dr. SMITH para una consulta.", [("SMITH", "NAME", "ner")])
    (en,), (es,) = trials.note_language(english, [0]), trials.note_language(spanish, [0])
    assert en == [0.0]
    assert es[0] > 0.2  # "que", "fue", "por", "para", "una" of 10 words
    assert trials.note_language(english, []) == []


def test_when_a_missed_token_costs_more_than_the_false_positives_below_it_then_the_cost_rule_keeps_them() -> None:
    import numpy as np

    # scores of six tokens, best first: two identifiers, two words, one identifier, one word; -inf: no candidate
    best = np.array([0.9, 0.8, 0.5, 0.4, 0.3, 0.2, -np.inf])
    phi = np.array([True, True, False, False, True, False, False])
    skip = np.zeros(7, dtype=bool)
    mask = np.ones(7, dtype=bool)
    # keeping the third identifier costs two false positives: worth it at a cost of 3, not at 1
    assert trials.cost_threshold(best, phi, skip, mask, 3.0) == 0.3
    assert trials.cost_threshold(best, phi, skip, mask, 1.0) == 0.8
    # tokens outside the mask do not count
    assert trials.cost_threshold(best, phi, skip, np.array([True, True, True, True, False, True, True]), 3.0) == 0.8


def test_when_the_threshold_is_bootstrapped_over_patients_then_it_is_the_median_of_the_resamples_thresholds() -> None:
    import numpy as np

    # four patients' identifier tokens (and one word): the recall target's threshold moves with who is drawn
    best = np.array([0.9, 0.8, 0.6, 0.5, 0.05, 0.7])
    phi = np.array([True, True, True, True, True, False])
    skip = np.zeros(6, dtype=bool)
    group = np.array([0, 0, 1, 2, 3, 1])
    mask = np.ones(6, dtype=bool)
    # with every patient once, recall 0.8 keeps 4 of 5: the fourth best score
    rng = np.random.default_rng(7)
    draws = []
    for _ in range(200):
        w = rng.poisson(1.0, 4)[group[phi]].astype(float)
        if w.sum():
            reach = np.cumsum(w[np.argsort(-best[phi], kind="stable")]) >= 0.8 * w.sum() - 1e-9
            draws.append(np.sort(best[phi])[::-1][np.argmax(reach)])
    assert trials.bootstrap_threshold(best, phi, skip, mask, group, 0.8, seed=7) == float(np.median(draws))
    # a score the patient that holds it is not always drawn with: the median lies above the lone low token
    assert trials.bootstrap_threshold(best, phi, skip, mask, group, 0.8, seed=7) > 0.05
    # the word (phi False) and tokens outside the mask never set it
    assert trials.bootstrap_threshold(best, phi, skip, np.array([1, 1, 1, 1, 0, 1], bool), group, 1.0) == 0.5


def test_when_the_seed_ensemble_is_patched_in_then_a_model_is_four_seeds_averaged_and_the_fit_is_restored() -> None:
    import numpy as np

    from processors.training import decider as T

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, len(T.FEATURES)))
    x[:, [T.FEATURES.index(c) for c in T.CATEGORICAL]] = 0
    y = (x[:, 10] > 0).astype(np.int64)
    params = {**T.PARAMS, "seed": 5}
    with trials.seed_ensemble():
        models = T.fit(x, y, 5, params)
        assert [m.params["seed"] for m in models] == [5, 1005, 2005, 3005]
        mean = T.predict(models, x[:3])
    singles = [T.predict(T.fit(x, y, 5, {**params, "seed": s}), x[:3]) for s in (5, 1005, 2005, 3005)]
    assert np.allclose(mean, np.mean(singles, axis=0))
    assert T.fit.__module__ == "processors.training.decider"


def test_when_the_ner_noise_trial_copies_the_design_notes_then_each_copy_keeps_its_patients_fold() -> None:
    from processors.evaluation.folds import group_folds
    from processors.evaluation.gold import GoldNote
    from processors.evaluation.lockbox import in_lockbox

    notes = [GoldNote(id=f"physionet-deid-{i}", text="Seen by SMITH.", spans=(), group=f"p{i % 7}") for i in range(30)]
    design = [n for n in notes if not in_lockbox(n)]
    copies = trials.fp32_copy(design)
    assert [c.id for c in copies] == [n.id + "#fp32" for n in design]
    assert [c.group for c in copies] == [n.group for n in design]
    assert group_folds(copies, 3, 0) == group_folds(design, 3, 0)  # what corpora_table gives each corpus
    assert not any(in_lockbox(c) for c in copies)  # a copy of a design note is no lockbox note


def test_when_another_ners_spans_are_given_without_its_model_then_the_run_is_refused_and_nothing_is_overridden(
        monkeypatch: Any, tmp_path: Path) -> None:
    import pytest

    D = trials.D
    monkeypatch.setattr(D, "OVERRIDE", {"oof": None, "ner_model": None, "fp32": False, "other_oof": []})
    out = tmp_path / "trials.json"
    for extra in (["--oof", str(tmp_path / "oof.jsonl.gz")], ["--ner-model", str(tmp_path / "model")]):
        monkeypatch.setattr(sys, "argv", ["decider_trials.py", "cv", "--trial", "baseline", "-o", str(out), *extra])
        with pytest.raises(SystemExit, match="go together"):
            trials.main()
        assert D.OVERRIDE["oof"] is None and D.OVERRIDE["ner_model"] is None
    # another corpus's out-of-fold spans stand for a NER other than the shipped one: not without it
    monkeypatch.setattr(sys, "argv", ["decider_trials.py", "cv", "--trial", "baseline", "-o", str(out),
                                      "--other-oof", str(tmp_path / "meddocan.jsonl.gz")])
    with pytest.raises(SystemExit, match="goes with --oof"):
        trials.main()
    assert D.OVERRIDE["other_oof"] == []
    assert not out.exists()


def test_when_rows_are_weighted_by_tokens_then_each_counts_the_tokens_its_decision_moves() -> None:
    import numpy as np

    from processors.training.decider import Table, TokenTable

    # tokens 0-5: 1 and 2 identifier tokens, 5 fixed (covered by a candidate no model drops)
    tt = TokenTable(phi=[False, True, True, False, False, True], skip=[False] * 6,
                    fixed=[False, False, False, False, False, True], note_of_token=[0] * 6,
                    cand_tokens=[[0, 1, 2], [3, 4], [], [4, 5], [5]])
    table = Table(rows=[[0.0]] * 5, y=[1, 0, 0, 0, 1], note=[0] * 5, tokens=tt)
    # an identifier candidate: its identifier tokens (2, not the word beside them); another: all it covers but
    # the fixed token; at least 1
    assert trials.token_weights(table).tolist() == [2.0, 2.0, 1.0, 1.0, 1.0]
    assert trials.TRIALS["token_weights"].token_weight and not trials.TRIALS["baseline"].token_weight
    assert isinstance(trials.token_weights(table), np.ndarray)


def test_when_the_spelling_trial_reads_a_misspelt_word_then_its_nearest_english_word_is_scored() -> None:
    note = _note("spoke at LENTGH with Wisniewski, plan reviewed", [("LENTGH", "NAME", "ner"),
                                                                   ("Wisniewski", "NAME", "ner"),
                                                                   ("plan", "NAME", "ner")])
    (typo, name, short) = trials.spelling(note, [0, 1, 2])
    assert typo[0] > 4.5 and typo[2] == 1.0  # "length", its only word
    assert name == [0.0, 0.0, 0.0]  # a surname no English word is one edit from
    assert short == [0.0, 0.0, 0.0]  # "plan" is a word itself


def test_when_the_section_trial_reads_headings_then_each_candidate_gets_the_kind_of_the_last_one() -> None:
    text = "Pt seen by SMITH.\nRESP: on 5/5 overnight. \nSOCIAL: son JOHN called.\nA: stable"
    note = _note(text, [("SMITH", "NAME", "ner"), ("5/5", "DATE", "ner"), ("JOHN", "NAME", "ner"),
                        ("stable", "NAME", "ner")])
    rows = trials.sections(note, [0, 1, 2, 3])
    kinds = [trials.SECTION_NAMES[r.index(1.0)] for r in rows]
    assert kinds == ["section_none", "section_resp", "section_social", "section_plan"]
    assert all(sum(r) == 1.0 and len(r) == len(trials.SECTION_NAMES) for r in rows)


def test_when_the_relative_scores_trial_reads_a_note_then_each_ner_score_is_read_against_the_notes() -> None:
    text = "Seen by SMITH and JONES; ROSS called; plan per GH."
    note = _note(text, [("SMITH", "NAME", "ner"), ("JONES", "NAME", "ner"), ("ROSS", "NAME", "regex"),
                        ("GH", "ORGANIZATION", "ner")])
    scores = {"SMITH": 0.9, "JONES": 0.3, "ROSS": 0.8, "GH": 0.1}
    note = note.replace(spans=tuple(s.model_copy(update={"score": scores[text[s.start:s.end]]}) for s in note.spans))
    rows = trials.relative_scores(note, [0, 1, 2, 3])
    # the note's NER scores: 0.1, 0.3, 0.9 (ROSS is the regex step's); median 0.3, one at 0.5 or more
    assert rows[0] == [1.0, 1.0, 0.3, 1.0]
    assert rows[1] == [pytest.approx(2 / 3), pytest.approx(0.3 / 0.9), 0.3, 1.0]
    assert rows[2] == [0.0, 0.0, 0.3, 1.0]  # no NER span on it: score 0, below every NER score
    assert rows[3] == [pytest.approx(1 / 3), 1.0, 0.3, 1.0]
    assert len(trials.RELATIVE_NAMES) == 4


def test_when_the_other_zipf_trial_reads_a_spanish_noun_then_its_other_language_frequency_is_high() -> None:
    text = "Informe: Varón de 64 años, visto por Zubizarreta."
    note = _note(text, [("Varón", "NAME", "ner"), ("Zubizarreta", "NAME", "ner"), ("64", "DATE", "ner")])
    varon, name, number = trials.other_language_zipf(note, [0, 1, 2])
    assert varon[0] > 3.0 and varon[2] > 2.0  # a Spanish word, unknown in English
    assert name[0] < varon[0] - 1.0  # a surname is rarer in every language
    assert number == [-1.0, -1.0, 0.0]
    assert len(trials.OTHER_ZIPF_NAMES) == 3


def test_when_the_monotone_trial_is_patched_in_then_a_model_rises_with_the_ner_score_and_the_params_are_restored(
        ) -> None:
    import numpy as np

    from processors.training import decider as T

    before = dict(T.PARAMS)
    names = list(T.FEATURES)
    score, drug = names.index("ner_score"), names.index("cue_listed_drug")
    rng = np.random.default_rng(0)
    x = rng.random((600, len(names)))
    x[:, drug] = rng.integers(0, 2, 600)
    # labels that fall with the NER score on half of its range: a tree learns it, the constraint must not
    y = ((x[:, score] > 0.5) ^ (x[:, score] > 0.8)).astype(np.int64)
    grid = np.tile(x[:1], (21, 1))
    grid[:, score] = np.linspace(0, 1, 21)
    free = T.predict(T.fit(x, y, 60, {**T.PARAMS, "min_data_in_leaf": 5}), grid)
    with trials.monotone():
        constraints = T.PARAMS["monotone_constraints"]
        assert len(constraints) == len(names)
        assert constraints[score] == 1 and constraints[drug] == -1 and constraints[names.index("label")] == 0
        bound = T.predict(T.fit(x, y, 60, {**T.PARAMS, "min_data_in_leaf": 5}), grid)
    assert np.any(np.diff(free) < -1e-9)  # unconstrained, the score's rise lowers the odds somewhere
    assert np.all(np.diff(bound) >= -1e-9)  # constrained, never
    assert T.PARAMS == before


@pytest.mark.parametrize(("flag", "expected"), [
    ([], {"physionet_lockbox", "synthetic", "meddocan_dev_design", "meddocan_dev_lockbox"}),
    (["--no-lockbox"], {"synthetic", "meddocan_dev_design"}),
])
def test_when_lockbox_seeds_runs_with_no_lockbox_then_no_lockbox_set_is_scored(
        monkeypatch: Any, tmp_path: Path, flag: list[str], expected: set[str]) -> None:
    D = trials.D
    monkeypatch.setattr(D, "OVERRIDE", {"oof": None, "ner_model": None, "fp32": False, "other_oof": []})
    monkeypatch.setattr(D, "eval_golds", lambda: {k: [] for k in sorted(
        {"physionet_lockbox", "synthetic", "meddocan_dev_design", "meddocan_dev_lockbox"})})
    seen: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def eval_sets(threshold: float, quantize: bool | None = None, *, golds: Any = None, gpu: Any = None) -> Any:
        seen["golds"] = golds
        raise Stop  # the sets are chosen: nothing is trained or scored here

    monkeypatch.setattr(D, "eval_sets", eval_sets)
    monkeypatch.setattr(sys, "argv", ["decider_trials.py", "lockbox-seeds", "--trial", "baseline", "-o",
                                      str(tmp_path / "seeds.json"), *flag])
    with pytest.raises(Stop):
        trials.main()
    assert set(seen["golds"]) == expected


def test_when_the_corpus_convention_trial_is_patched_in_then_weekdays_and_states_go_and_type_words_stay() -> None:
    from dictionaries.medical import medical_vocabulary
    from processors.decide.cues import Cues
    from processors.decide.features import Extractor

    note = _note("Seen Saturday in Texas by Dr. Hale at Mercy Medical Center.",
                 [("Saturday", "DATE", "ner"), ("Texas", "LOCATION", "ner"), ("Hale", "NAME", "ner"),
                  ("Mercy Medical Center", "ORGANIZATION", "ner")])
    assert trials.POLICIES == {"decide": {}, "recovery": {}}
    shipped = Extractor(Cues(), medical_vocabulary(), **trials.POLICIES["decide"]).split(note)[:2]
    assert shipped[0] == [0, 1]  # the policies keep the weekday and the state
    with trials.corpus_convention():
        assert trials.POLICIES == {"decide": {"weekdays": False, "states_countries": False},
                                   "recovery": {"institution_type_words": False}}
        fixed, scored = Extractor(Cues(), medical_vocabulary(), **trials.POLICIES["decide"]).split(note)[:2]
        # both policies drop theirs: in neither list; the name and the institution go to the model as before
        assert 0 not in fixed + scored and 1 not in fixed + scored
        assert scored == shipped[1] and 2 in scored and 3 in scored
        # the recovery option the table's detection runs with is one recovery knows (its config forbids others)
        recovery = build_processor("recovery", trials.POLICIES["recovery"], BuildContext(cache_dir=vocab.cache_dir()))
        assert recovery.config.institution_type_words is False
    assert trials.POLICIES == {"decide": {}, "recovery": {}}


def test_when_a_learner_trial_is_patched_in_then_its_trees_are_smaller_and_the_settings_are_restored() -> None:
    import numpy as np

    from processors.training import decider as T

    before, rounds = dict(T.PARAMS), T.ROUNDS
    rng = np.random.default_rng(1)
    x = rng.random((400, len(T.FEATURES)))
    y = (x[:, 0] + 0.3 * rng.random(400) > 0.6).astype(np.int64)
    with trials.TRIALS["tiny_trees"].patch():
        assert T.PARAMS["num_leaves"] == 7 and T.PARAMS["min_data_in_leaf"] == 40 and T.ROUNDS == rounds
        model = T.fit(x, y, 20, T.PARAMS)
        leaves = [t["num_leaves"] for t in model.dump_model()["tree_info"]]
        assert leaves and max(leaves) <= 7
    with trials.TRIALS["fewer_rounds"].patch():
        assert T.ROUNDS == 250 and T.PARAMS == before
    assert T.PARAMS == before and T.ROUNDS == rounds


def test_when_the_ner_probs_trial_reads_a_note_then_each_candidate_gets_its_words_label_probabilities(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = "Seen by SMITH HAD, on 2/4 vent."
    note = _note(text, [("SMITH HAD", "NAME", "ner"), ("2/4", "DATE", "regex"), ("vent", "LOCATION", "ner")])
    labels = ("NAME", "DATE", "LOCATION")
    at = text.index
    # stored pieces: [start, end, NAME, DATE, LOCATION] x 10,000; "SM" + "ITH" two pieces of one word (its highest
    # counts), "HAD" unsure, "2"/"4" a date piece each, "on" a little of everything; "vent", "by", "Seen" not stored
    pieces = [[at("SMITH"), at("SMITH") + 2, 9000, 0, 100], [at("SMITH") + 2, at("SMITH") + 5, 9500, 0, 0],
              [at("HAD"), at("HAD") + 3, 3000, 0, 1000], [at("on"), at("on") + 2, 20, 30, 0],
              [at("2/4"), at("2/4") + 1, 0, 8000, 0], [at("2/4") + 2, at("2/4") + 3, 0, 6000, 0]]
    monkeypatch.setitem(trials.NER_PROBS, "labels", labels)
    monkeypatch.setitem(trials.NER_PROBS, "notes", {"n1": pieces})
    rows = [dict(zip(trials.NER_PROB_NAMES, r, strict=True)) for r in trials.ner_probs(note, [0, 1, 2])]
    name, date, vent = rows
    assert name["ner_p_label_mean"] == pytest.approx((0.95 + 0.30) / 2)  # a word: the highest of its pieces
    assert name["ner_p_label_min"] == pytest.approx(0.30)
    assert name["ner_p_entity_mean"] == pytest.approx((0.96 + 0.40) / 2)
    assert name["ner_p_other_max"] == pytest.approx((0.01 + 0.10) / 2)  # LOCATION's mean
    assert name["ner_p_before"] == 0.0 and name["ner_p_after"] == pytest.approx(0.005)  # "by" unstored; "on"
    assert date["ner_p_label_mean"] == pytest.approx(0.7) and date["ner_p_label_min"] == pytest.approx(0.6)
    assert vent["ner_p_label_mean"] == 0.0 and vent["ner_p_after"] == -1.0  # no word after "vent"
    assert len(trials.NER_PROB_NAMES) == len(rows[0])


def test_when_piece_masses_are_kept_then_each_label_sums_its_classes_and_only_likely_entities_stay() -> None:
    import numpy as np

    from processors.ner.step import TagIndex

    tags = ["O", "B-NAME/PATIENT", "I-NAME/PATIENT", "B-NAME/PROVIDER", "I-NAME/PROVIDER", "B-DATE", "I-DATE"]
    index = TagIndex.from_tags(tags)
    probs = np.asarray([[0.9999, 0.00005, 0, 0, 0, 0.00005, 0],  # entity 0.0001: under the floor
                        [0.1, 0.3, 0.1, 0.4, 0.0, 0.1, 0.0],
                        [0.5, 0.0, 0.0, 0.0, 0.0, 0.2, 0.3]], dtype=np.float32)
    offsets = np.asarray([[0, 4], [5, 10], [11, 15]])
    labels, rows = cv.piece_masses(offsets, probs, index)
    assert labels == ("NAME", "DATE")
    assert rows == [[5, 10, 8000, 1000], [11, 15, 0, 5000]]  # NAME: both roles' B + I; DATE: B + I; no text


def test_when_the_design_only_trial_reads_a_note_without_stored_probabilities_then_its_columns_are_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import math

    note = _note("Seen by SMITH today.", [("SMITH", "NAME", "ner")])
    monkeypatch.setitem(trials.NER_PROBS, "labels", ("NAME",))
    monkeypatch.setitem(trials.NER_PROBS, "notes", {"other-note": []})
    (row,) = trials.ner_probs_design(note, [0])
    assert len(row) == len(trials.NER_PROB_NAMES) and all(math.isnan(v) for v in row)
    monkeypatch.setitem(trials.NER_PROBS, "notes", {"n1": [[8, 13, 9000]]})  # a design note's: as ner_probs
    assert trials.ner_probs_design(note, [0]) == trials.ner_probs(note, [0])
    assert trials.ner_probs_design(note, [0])[0][0] == pytest.approx(0.9)
