"""decide: one learned decision over every candidate span (issue 25).

The detectors aim at recall; recovery drops only certain medical terms. This step scores each remaining candidate
with a gradient-boosted model over its features (``features.FEATURES``: the detectors' sources and scores, the
span's shape and case, its words' vocabularies, the words around it, and the cues of the old rules,
``cues.RULES``), calibrated to the probability that the candidate holds an identifier, and keeps those at or
above the model's threshold (chosen by nested cross-validation by patient for recall first; the model card
says how). Dropped candidates go to ``note.dropped`` with that probability as their score, so the residual-risk
score (``processors.risk``) counts the expected identifiers among them.

Never dropped: candidates from a protected source (the message's own identifiers), with an identifier's shape,
repeating the message's identifiers, or from a detector the model was not trained on (an LLM's proposals are
add-only). Policy, not fitting: a candidate made only of weekday names is kept or dropped by ``weekdays``, one that is
only a US state or a country by ``states_countries``, one that is only an age up to 89 by ``ages``.

The model is chosen by the detectors the pipeline runs: ``models/decider`` with the NER step, ``models/
decider-no-ner`` without it (``model_dir`` overrides). With the NER step, a note in a routed language (the pipeline
policy's ``language_routes``, :mod:`processors.language`) is scored by that language's model, trained on the
candidates of the NER model the NER step runs for it (``models/decider-es``; ``route_model_dirs`` overrides). The
ensemble step after this one only merges overlaps.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dictionaries.jargon import jargon_version
from dictionaries.medical import MedicalVocabulary, medical_vocabulary
from dictionaries.medical_syntax import clinical_measures
from processors.decide.cues import Cues
from processors.decide.features import SOURCES, Extractor
from processors.decide.model import DEFAULT_MODEL, NO_NER_MODEL, ROUTE_MODELS, Decider, load
from processors.language import by_route, load_identifier, route_folder
from processors.pipeline import BuildContext, Note, register
from schemas.models import Span

logger = logging.getLogger(__name__)


@register("decide")
class Decide:
    """Keep or drop each candidate span by the decision model (see the module docstring)."""

    name = "decide"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        #: a model folder (``deidstream train-decider`` writes one); None: the shipped model for the detectors run
        model_dir: str | None = None
        #: keep candidates at or above this calibrated probability; None: the model's own threshold
        threshold: float | None = Field(default=None, ge=0, le=1)
        protect_sources: list[str] = Field(default_factory=lambda: ["message"])
        protect_message_identifiers: bool = True
        #: policy: a weekday's name ("seen Monday") is removed. HIPAA Safe Harbor lists a date's elements (day,
        #: month), not weekdays, and the PhysioNet annotators left them; but general-English annotations
        #: (presidio_synth_v2) and our generator label them, and beside a shifted or surrogate date (surrogate,
        #: dateshift modes) a kept weekday tells the shift modulo 7. Recall first: removed by default (README,
        #: Quality: precision with and without)
        weekdays: bool = True
        #: policy: a place that is only a US state or a country ("lives in Texas") is removed. Safe Harbor requires
        #: only the places smaller than a state; general-English annotations (presidio_synth_v2) and MEDDOCAN label
        #: them, the PhysioNet annotators did not (README, Quality: precision with and without)
        states_countries: bool = True
        #: policy: a candidate that is only an age up to 89 ("de 69" in "Varón de 69 años", "42 años", "femenina de
        #: 30", "45 yo"; ``features.age_only``) is removed. Safe Harbor makes only an age over 89 an identifier (the
        #: regex step's AGE candidate, never one of these), and no gold set here counts a younger age: false (the
        #: default) drops such a candidate without the model; true keeps it (a site that treats every age as an
        #: identifier still needs a detector for the ages no candidate covers)
        ages: bool = False
        #: the model folder of each routed language (the pipeline policy's ``language_routes``; with the NER step
        #: only); a routed language not named here takes the shipped model of that language (``ROUTE_MODELS``)
        route_model_dirs: dict[str, str] = Field(default_factory=dict)

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config
        with_ner = not ctx.steps or "ner" in ctx.steps
        self.model: Decider = load(Path(config.model_dir) if config.model_dir else
                                   DEFAULT_MODEL if with_ner else NO_NER_MODEL)
        # the step's option, else the detector profile's threshold (issue 26; None until fitted), else the model's
        self._fixed_threshold = next((t for t in (config.threshold, ctx.profile.decide_threshold if ctx.profile
                                                  else None) if t is not None), None)
        self.vocab: MedicalVocabulary = medical_vocabulary(ctx.cache_dir)
        self._cues = Cues(ctx.cache_dir)
        self.threshold, self.extractor = self._serve(self.model)
        #: routed language -> (model, threshold, extractor); the default route's are the attributes above. The
        #: routes' models were trained on their NER's candidates, so without the NER step every note takes the default
        self.routes: dict[str, tuple[Decider, float, Extractor]] = {}
        for lang in ctx.policy.language_routes if with_ner else ():
            model = load(route_folder("decide", lang, config.route_model_dirs, ROUTE_MODELS))
            self.routes[lang] = (model, *self._serve(model))
        if self.routes:
            load_identifier()

    def _serve(self, model: Decider) -> tuple[float, Extractor]:
        """The threshold and the feature extractor ``model`` is served with."""
        threshold = self._fixed_threshold if self._fixed_threshold is not None else model.threshold
        config = self.config
        return threshold, Extractor(
            self._cues, self.vocab, frozenset(config.protect_sources), config.protect_message_identifiers,
            config.weekdays, frozenset(model.meta.get("sources", SOURCES)), config.states_countries, config.ages)

    def dictionary_versions(self) -> dict[str, str]:
        deciders = self.model.model_id + "".join(f"+{k}:{m.model_id}" for k, (m, _, _) in self.routes.items())
        return {"decider": deciders, "clinical_measures": clinical_measures().version,
                "clinical_words": jargon_version(), "medical": self.vocab.version}

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        default = (self.model, self.threshold, self.extractor)
        # each note's (kept without the model, scored, their probabilities, threshold); each route's model once
        judged: list[Any] = [None] * len(notes)
        for lang, idx in by_route([n.text for n in notes], self.routes).items():
            model, threshold, extractor = self.routes.get(lang, default)
            parts = [extractor.split(notes[j]) for j in idx]
            probs = model.probability([row for _, _, rows in parts for row in rows])
            at = 0
            for j, (fixed, scored, rows) in zip(idx, parts, strict=True):
                judged[j] = (fixed, scored, probs[at:at + len(rows)], threshold)
                at += len(rows)
        out: list[Note] = []
        for note, (fixed, scored, probs, threshold) in zip(notes, judged, strict=True):
            k = 0
            keep = set(fixed)
            dropped: list[Span] = []
            for i in scored:
                p = float(probs[k])
                k += 1
                if p >= threshold:
                    keep.add(i)
                else:
                    dropped.append(note.spans[i].model_copy(update={"score": round(p, 6)}))
            scored_set = set(scored)
            dropped += [s.model_copy(update={"score": 0.0}) for i, s in enumerate(note.spans)
                        if i not in keep and i not in scored_set]  # the policies' (weekdays, states_countries)
            if dropped:
                logger.debug("decide dropped %d of %d candidates", len(dropped), len(note.spans))
            out.append(note.replace(spans=tuple(s for i, s in enumerate(note.spans) if i in keep),
                                    dropped=note.dropped + tuple(dropped)))
        return out
