"""Training the decision stage (``deidstream train-decider``; ``processors.decide``).

1. Candidates: the detectors and recovery run over annotated notes (the NER spans may come from a file: for the
   PhysioNet dev notes, each note's spans from the fold model that never saw its patient, so the model learns
   from candidates like those it will see on new patients). Each candidate the model may drop becomes a row of
   ``processors.decide.features`` and a label: 1 when any of its tokens is a gold identifier token.
2. Folds by patient (``processors.evaluation.folds``; notes without a patient are their own group): every
   candidate gets an out-of-fold score. The threshold is chosen for recall first on out-of-fold scores (the
   smallest loss of identifier tokens, then the fewest false-positive tokens, at a recall target), and the
   estimate of the whole procedure is nested: each outer fold's threshold comes from inner folds that never
   saw it. Calibration: isotonic regression of the outcome on the out-of-fold scores.
3. The shipped model: fitted on every training note, with the threshold and calibration of step 2.

Token arithmetic (:class:`TokenTable`) reproduces ``processors.evaluation.scoring`` (generous token overlap; a
span merge never changes which tokens are covered), so a threshold sweep costs numpy, not a pipeline run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from processors.decide.features import CATEGORICAL, FEATURES, Extractor
from processors.evaluation.gold import GoldNote
from processors.evaluation.scoring import _covered, tokens
from processors.pipeline import Note

logger = logging.getLogger(__name__)

#: LightGBM settings of the shipped model (small trees, strong regularisation: a few thousand candidates)
PARAMS: dict[str, Any] = {
    "objective": "binary", "learning_rate": 0.05, "num_leaves": 31, "min_data_in_leaf": 20,
    "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "lambda_l2": 1.0,
    "seed": 13, "deterministic": True, "num_threads": 1, "verbose": -1, "force_row_wise": True,
}
ROUNDS = 500
#: a threshold that keeps every candidate (tokens no candidate covers score -inf)
KEEP_ALL = -float(np.finfo(np.float64).max)
#: the share of identifier tokens the threshold may cost at most, besides what the candidates already miss
DEFAULT_TARGET_RECALL = 0.975


@dataclass
class TokenTable:
    """Tokens of the notes (scoring's tokens) with gold flags, and which tokens each candidate covers."""

    phi: list[bool] = field(default_factory=list)
    skip: list[bool] = field(default_factory=list)
    fixed: list[bool] = field(default_factory=list)  # covered by a candidate no model may drop
    note_of_token: list[int] = field(default_factory=list)
    cand_tokens: list[list[int]] = field(default_factory=list)

    def arrays(self) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        return np.asarray(self.phi, bool), np.asarray(self.skip, bool), np.asarray(self.fixed, bool)


@dataclass
class Table:
    """The training table: one row per candidate the model may drop."""

    rows: list[list[float]] = field(default_factory=list)
    y: list[int] = field(default_factory=list)
    note: list[int] = field(default_factory=list)  # index of the candidate's note in ``notes``
    notes: list[GoldNote] = field(default_factory=list)
    tokens: TokenTable = field(default_factory=TokenTable)

    def x(self) -> npt.NDArray[np.float64]:
        return np.asarray(self.rows, dtype=np.float64).reshape(len(self.rows), len(FEATURES))


def build_table(gold: Sequence[GoldNote], detected: Sequence[Note], extractor: Extractor) -> Table:
    """Rows, labels and token coverage of every note's candidates (``detected``: the notes after the detectors and
    recovery, in ``gold``'s order)."""
    table = Table()
    tt = table.tokens
    for n, (g, note) in enumerate(zip(gold, detected, strict=True)):
        if note.error is not None:
            raise ValueError(f"note {n}: the detectors failed ({note.error.code})")
        toks = tokens(g.text)
        ends = [e for _, e in toks]
        base = len(tt.phi)
        phi = [False] * len(toks)
        for s in g.spans:
            for i in _covered(toks, ends, s.start, s.end):
                phi[i] = True
        skip = [False] * len(toks)
        for a, b in g.ignored:
            for i in _covered(toks, ends, a, b):
                skip[i] = not phi[i]
        fixed_idx, scored_idx, rows = extractor.split(note)
        fixed = [False] * len(toks)
        for i in fixed_idx:
            for t in _covered(toks, ends, note.spans[i].start, note.spans[i].end):
                fixed[t] = True
        tt.phi += phi
        tt.skip += skip
        tt.fixed += fixed
        tt.note_of_token += [n] * len(toks)
        for i, r in zip(scored_idx, rows, strict=True):
            cand = note.spans[i]
            covered = [t for t in _covered(toks, ends, cand.start, cand.end) if not skip[t]]
            table.rows.append(r)
            table.y.append(int(any(phi[t] for t in covered)))
            table.note.append(n)
            tt.cand_tokens.append([base + t for t in covered])
        table.notes.append(g)
    return table


def token_max(table: Table, scores: npt.NDArray[np.float64], cands: npt.NDArray[np.int64] | None = None,
              ) -> npt.NDArray[np.float64]:
    """Per token, the highest score of a candidate covering it (``inf`` for fixed tokens, ``-inf`` for none);
    ``cands``: the candidates ``scores`` belong to (default: all)."""
    tt = table.tokens
    best = np.full(len(tt.phi), -np.inf)
    best[np.asarray(tt.fixed, bool)] = np.inf
    idx = np.arange(len(table.rows)) if cands is None else cands
    for c, sc in zip(idx, scores, strict=True):
        toks = tt.cand_tokens[int(c)]
        if toks:
            best[toks] = np.maximum(best[toks], sc)
    return best


def counts_at(best: npt.NDArray[np.float64], phi: npt.NDArray[np.bool_], skip: npt.NDArray[np.bool_],
              threshold: float, mask: npt.NDArray[np.bool_] | None = None) -> tuple[int, int, int]:
    """(tp, fp, fn) tokens when candidates scoring >= ``threshold`` are kept (``mask``: the tokens counted)."""
    pred = best >= threshold
    keep = ~skip if mask is None else (~skip & mask)
    return (int(np.sum(pred & phi & keep)), int(np.sum(pred & ~phi & keep)), int(np.sum(~pred & phi & keep)))


def choose_threshold(best: npt.NDArray[np.float64], phi: npt.NDArray[np.bool_], skip: npt.NDArray[np.bool_],
                     target_recall: float, mask: npt.NDArray[np.bool_] | None = None) -> float:
    """The highest threshold whose token recall is at least ``target_recall`` or, where the candidates cannot
    reach it, at least their own recall less 0.005 (recall first); ties: the fewest false-positive tokens."""
    finite = np.unique(best[np.isfinite(best)])
    if finite.size == 0:
        return 0.0
    ceiling = counts_at(best, phi, skip, KEEP_ALL, mask)
    top = ceiling[0] / max(1, ceiling[0] + ceiling[2])
    want = min(target_recall, top - 0.005)
    # candidate thresholds: the distinct scores (keeping everything from that score up)
    lo, hi = 0, finite.size - 1
    # recall falls as the threshold rises: binary search for the highest score that keeps recall >= want
    while lo < hi:
        mid = (lo + hi + 1) // 2
        tp, _fp, fn = counts_at(best, phi, skip, float(finite[mid]), mask)
        if tp / max(1, tp + fn) >= want:
            lo = mid
        else:
            hi = mid - 1
    return float(finite[lo])


def fit(x: npt.NDArray[np.float64], y: npt.NDArray[np.int64], rounds: int = ROUNDS,
        params: Mapping[str, Any] | None = None, weight: npt.NDArray[np.float64] | None = None) -> Any:
    """A LightGBM booster on rows ``x``, labels ``y`` and row weights ``weight``."""
    import lightgbm

    data = lightgbm.Dataset(x, label=y, weight=weight, feature_name=list(FEATURES),
                            categorical_feature=[FEATURES.index(c) for c in CATEGORICAL], free_raw_data=False)
    return lightgbm.train(dict(params or PARAMS), data, num_boost_round=rounds)


def predict(booster: Any, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    if len(x) == 0:
        return np.zeros(0)
    out: npt.NDArray[np.float64] = np.asarray(booster.predict(x, num_threads=1), dtype=np.float64)
    return out


def isotonic(raw: npt.NDArray[np.float64], y: npt.NDArray[np.int64], points: int = 64
             ) -> tuple[list[float], list[float]]:
    """Breakpoints (raw score, probability) of an isotonic fit of ``y`` on ``raw``, thinned to about ``points``
    and made strictly increasing (a tiny slope) so the calibrated probability keeps the raw order."""
    from sklearn.isotonic import IsotonicRegression

    order = np.argsort(raw)
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(raw[order], y[order])
    xs = np.quantile(raw, np.linspace(0, 1, points))
    xs = np.unique(np.concatenate([[0.0], xs, [1.0]]))
    ys = iso.predict(xs)
    # a sliver of the rank keeps the map strictly increasing inside [0, 1] (isotonic fits have plateaus)
    ys = (1 - 1e-3) * ys + 1e-3 * np.linspace(0.0, 1.0, len(xs))
    return [float(v) for v in xs], [float(v) for v in ys]


@dataclass
class CVResult:
    """Out-of-fold raw scores (one per candidate), the nested estimate's per-token scores, each outer fold's
    threshold, and the inner folds' out-of-fold scores each outer fold chose it from (zero on its own rows)."""

    oof: npt.NDArray[np.float64]
    nested_best: npt.NDArray[np.float64]  # per token: inf kept / -inf dropped under the fold's own threshold
    thresholds: list[float]
    inner: list[npt.NDArray[np.float64]]


def cross_validate(table: Table, fold_of_note: Sequence[int], k: int, target_recall: float,
                   scored_notes: npt.NDArray[np.bool_], rounds: int = ROUNDS,
                   weight: npt.NDArray[np.float64] | None = None,
                   params: Mapping[str, Any] | None = None, *, scored: Table | None = None,
                   scored_fold_of_note: Sequence[int] | None = None) -> CVResult:
    """Out-of-fold scores and the nested estimate (see the module docstring). ``fold_of_note``: each note's fold;
    ``scored_notes``: the notes whose tokens choose thresholds (the real notes; the other corpora train only).

    ``scored`` (with ``scored_fold_of_note``): the fold models train on ``table`` but score this other table's rows
    (the same notes' candidates from another numeric path of the NER: :func:`profile_threshold`); every one of its
    notes chooses thresholds. The scores and the nested estimate are then that table's."""
    x = table.x()
    y = np.asarray(table.y, dtype=np.int64)
    w = np.ones(len(y)) if weight is None else weight
    cand_fold = np.asarray([fold_of_note[n] for n in table.note], dtype=np.int64)
    out_table = table if scored is None else scored
    out_folds = fold_of_note if scored_fold_of_note is None else scored_fold_of_note
    sx = x if scored is None else scored.x()
    score_fold = np.asarray([out_folds[n] for n in out_table.note], dtype=np.int64)
    tok_note = np.asarray(out_table.tokens.note_of_token, dtype=np.int64)
    tok_fold = np.asarray([out_folds[n] for n in tok_note], dtype=np.int64)
    tok_scored = scored_notes[tok_note] if scored is None else np.ones(len(tok_note), dtype=bool)
    phi, skip, _ = out_table.tokens.arrays()
    oof = np.zeros(len(out_table.rows))
    nested = np.full(len(phi), -np.inf)
    thresholds: list[float] = []
    inners: list[npt.NDArray[np.float64]] = []
    for f in range(k):
        out_c = cand_fold == f
        held_out = score_fold == f
        model = fit(x[~out_c], y[~out_c], rounds, params, weight=w[~out_c])
        oof[held_out] = predict(model, sx[held_out])
        # the threshold of this outer fold: from inner folds over the other folds only
        inner = np.zeros(len(out_table.rows))
        for g in range(k):
            if g == f:
                continue
            train = ~out_c & (cand_fold != g)
            inner[score_fold == g] = predict(fit(x[train], y[train], rounds, params, weight=w[train]),
                                             sx[score_fold == g])
        inners.append(inner)
        rest = np.flatnonzero(~held_out)
        best_inner = token_max(out_table, inner[rest], rest)
        t = choose_threshold(best_inner, phi, skip, target_recall, mask=(tok_fold != f) & tok_scored)
        thresholds.append(t)
        fold_c = np.flatnonzero(held_out)
        best_f = token_max(out_table, oof[fold_c], fold_c)
        mask = tok_fold == f
        nested[mask] = np.where(best_f[mask] >= t, np.inf, -np.inf)
        logger.info("decider fold %d: threshold %.4f", f, t)
    return CVResult(oof, nested, thresholds, inners)


def summary(best: npt.NDArray[np.float64], table: Table, threshold: float,
            mask: npt.NDArray[np.bool_] | None = None,
            candidates: npt.NDArray[np.float64] | None = None) -> dict[str, Any]:
    """Token precision / recall / counts at ``threshold`` (``mask``: the tokens counted), and the candidates' own
    (every candidate kept; ``candidates``: their per-token scores when ``best`` holds decisions, not scores)."""
    phi, skip, _ = table.tokens.arrays()
    tp, fp, fn = counts_at(best, phi, skip, threshold, mask)
    ctp, cfp, cfn = counts_at(best if candidates is None else candidates, phi, skip, KEEP_ALL, mask)
    return {"precision": round(tp / max(1, tp + fp), 4), "recall": round(tp / max(1, tp + fn), 4),
            "tp": tp, "fp": fp, "fn": fn, "candidate_recall": round(ctp / max(1, ctp + cfn), 4),
            "candidate_precision": round(ctp / max(1, ctp + cfp), 4), "candidate_fn": cfn}


# -- the whole run -------------------------------------------------------------------------------------------


class StoredNer:
    """The ``ner`` step's place in a training pipeline: each note's spans from ``stored`` (note id -> spans, e.g.
    a fold model's out-of-fold spans), the real NER step for notes not in it."""

    name = "ner"

    def __init__(self, stored: Mapping[str, Sequence[Any]], make_model: Any) -> None:
        self.stored = stored
        self._make = make_model
        self._model: Any = None

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        from schemas.models import Span

        missing = [n for n in notes if n.note_id not in self.stored]
        if missing and self._model is None:
            self._model = self._make()
        done = {id(n): r for n, r in zip(missing, self._model.process_batch(missing) if missing else [],
                                          strict=True)}
        out = []
        for n in notes:
            if id(n) in done:
                out.append(done[id(n)])
            else:
                out.append(n.add_spans([s if isinstance(s, Span) else Span.model_validate(s)
                                        for s in self.stored[n.note_id]]))
        return out


def run_steps(gold: Sequence[GoldNote], steps: Sequence[str], *, options: Mapping[str, Mapping[str, Any]] | None = None,
              stored_ner: Mapping[str, Sequence[Any]] | None = None, context_steps: Sequence[str] | None = None,
              batch_size: int = 64, language_routes: Sequence[str] | None = None) -> list[Note]:
    """The notes after the pipeline ``steps`` (built as in a pipeline of ``context_steps``, default ``steps``), the
    NER spans from ``stored_ner`` where a note has them. ``language_routes``: the policy's (None: its default)."""
    from processors.pipeline import Pipeline, PipelineConfig, SharedPolicy, build_processor, make_context

    policy = SharedPolicy() if language_routes is None else SharedPolicy(language_routes=tuple(language_routes))
    config = PipelineConfig(steps=tuple(context_steps or steps), policy=policy,
                            options={k: dict(v) for k, v in (options or {}).items()})
    ctx = make_context(config)
    procs: list[Any] = []
    for step in steps:
        if step == "ner" and stored_ner is not None:
            procs.append(StoredNer(stored_ner, lambda: build_processor("ner", config.options.get("ner", {}), ctx)))
        else:
            procs.append(build_processor(step, config.options.get(step, {}), ctx))
    pipeline = Pipeline(procs, config)
    out: list[Note] = []
    inputs = [Note(input=g.to_note_in()) for g in gold]
    for i in range(0, len(inputs), batch_size):
        out.extend(pipeline.run_notes(inputs[i:i + batch_size]))
    return out


def detect(gold: Sequence[GoldNote], *, steps: Sequence[str] = ("regex", "ner", "dictionary", "recovery"),
           options: Mapping[str, Mapping[str, Any]] | None = None,
           stored_ner: Mapping[str, Sequence[Any]] | None = None) -> list[Note]:
    """The notes after the detectors and recovery: the decide step's input. Every note takes the default route's NER
    model (no language routing): a decision model learns the candidates of one NER model."""
    return run_steps(gold, steps, options=options, stored_ner=stored_ner,
                     context_steps=(*steps, "decide", "ensemble"), language_routes=())


@dataclass
class Corpus:
    """Annotated notes to train on; ``choose``: its tokens choose the threshold and the calibration (real notes of
    the kind the model will serve; generated or foreign-language notes only add training rows)."""

    name: str
    gold: list[GoldNote]
    choose: bool = True
    #: the weight of each of its candidate rows (the real notes can be few beside generated ones)
    weight: float = 1.0


def corpora_table(corpora: Sequence[Corpus], extractor: Extractor, *,
                  stored_ner: Mapping[str, Sequence[Any]] | None = None,
                  steps: Sequence[str] = ("regex", "ner", "dictionary", "recovery"),
                  options: Mapping[str, Mapping[str, Any]] | None = None, k: int = 5, fold_seed: int = 0,
                  ) -> tuple[Table, list[int], list[int], npt.NDArray[np.float64]]:
    """The candidates' table of every note of ``corpora`` after the detectors (NER spans from ``stored_ner`` where a
    note has them), each note's fold (folds by patient within its corpus), each note's corpus (its index) and each
    candidate row's weight (its corpus's)."""
    from processors.evaluation.folds import group_folds

    gold: list[GoldNote] = []
    detected: list[Note] = []
    fold_of_note: list[int] = []
    corpus_of_note: list[int] = []
    for ci, c in enumerate(corpora):
        detected += detect(c.gold, steps=steps, options=options, stored_ner=stored_ner)
        fold = [0] * len(c.gold)
        for f, idx in enumerate(group_folds(c.gold, k, fold_seed)):
            for i in idx:
                fold[i] = f
        gold += c.gold
        fold_of_note += fold
        corpus_of_note += [ci] * len(c.gold)
        logger.info("decider: %s, %d notes", c.name, len(c.gold))
    table = build_table(gold, detected, extractor)
    note_weight = np.asarray([corpora[c].weight for c in corpus_of_note], dtype=np.float64)
    return table, fold_of_note, corpus_of_note, note_weight[np.asarray(table.note, dtype=np.int64)]


def train_decider(corpora: Sequence[Corpus], out: Any, *, stored_ner: Mapping[str, Sequence[Any]] | None = None,
                  steps: Sequence[str] = ("regex", "ner", "dictionary", "recovery"),
                  options: Mapping[str, Mapping[str, Any]] | None = None, k: int = 5, fold_seed: int = 0,
                  target_recall: float = DEFAULT_TARGET_RECALL, rounds: int = ROUNDS,
                  extractor: Extractor | None = None, meta: Mapping[str, Any] | None = None,
                  params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Cross-validate, choose the threshold, calibrate, fit on everything and write the model folder ``out``;
    returns the report (also in the folder's ``decider.json``)."""
    from pathlib import Path

    from dictionaries.medical import medical_vocabulary
    from processors.decide import model as decider_model
    from processors.decide.cues import Cues
    from processors.evaluation.lockbox import refuse_lockbox

    if k < 3:
        raise ValueError("the nested cross-validation needs k >= 3 folds")
    for c in corpora:
        refuse_lockbox(c.gold, f"train-decider on {c.name}")
    if not any(c.choose for c in corpora):
        raise ValueError("no corpus chooses the threshold")
    extractor = extractor or Extractor(Cues(), medical_vocabulary())
    table, fold_of_note, corpus_of_note, weight = corpora_table(corpora, extractor, stored_ner=stored_ner,
                                                                steps=steps, options=options, k=k, fold_seed=fold_seed)
    scored = np.asarray([corpora[c].choose for c in corpus_of_note], dtype=bool)
    params = {**PARAMS, **(params or {})}
    cv = cross_validate(table, fold_of_note, k, target_recall, scored, rounds, weight, params)
    phi, skip, _ = table.tokens.arrays()
    tok_note = np.asarray(table.tokens.note_of_token, dtype=np.int64)
    tok_scored = scored[tok_note]
    best_oof = token_max(table, cv.oof)
    threshold_raw = choose_threshold(best_oof, phi, skip, target_recall, mask=tok_scored)
    cand_scored = scored[np.asarray(table.note, dtype=np.int64)]
    y = np.asarray(table.y, dtype=np.int64)
    calibration = isotonic(cv.oof[cand_scored], y[cand_scored])
    booster = fit(table.x(), y, rounds, params, weight=weight)
    threshold = float(np.interp(threshold_raw, *calibration))
    report: dict[str, Any] = {"folds": k, "fold_seed": fold_seed, "target_recall": target_recall,
                              "threshold_raw": round(threshold_raw, 6), "fold_thresholds_raw": [round(t, 6) for t in
                                                                                                 cv.thresholds],
                              "rounds": rounds, "params": params, "steps": list(steps), "corpora": []}
    tok_corpus = np.asarray(corpus_of_note, dtype=np.int64)[tok_note]
    cand_corpus = np.asarray(corpus_of_note, dtype=np.int64)[np.asarray(table.note, dtype=np.int64)]
    for ci, c in enumerate(corpora):
        mask = tok_corpus == ci
        report["corpora"].append({
            "name": c.name, "notes": len(c.gold), "chooses_threshold": c.choose, "weight": c.weight,
            "candidates": int(np.sum(cand_corpus == ci)), "positives": int(np.sum(y[cand_corpus == ci])),
            "out_of_fold": summary(best_oof, table, threshold_raw, mask),
            "nested": summary(cv.nested_best, table, 0.0, mask, candidates=best_oof),
        })
    gain = booster.feature_importance(importance_type="gain")
    report["importance"] = {FEATURES[i]: round(float(gain[i]), 1) for i in np.argsort(-gain)[:25]}
    body = dict(meta or {})
    body.update({"sources": sorted({"regex", "ner", "dictionary"} & set(steps)), "training": report})
    decider_model.save(Path(out), booster, calibration, threshold, body)
    return report


def profile_threshold(corpora: Sequence[Corpus], profile_stored: Mapping[str, Sequence[Any]], calibration: Any, *,
                      stored_ner: Mapping[str, Sequence[Any]] | None = None,
                      steps: Sequence[str] = ("regex", "ner", "dictionary", "recovery"),
                      options: Mapping[str, Mapping[str, Any]] | None = None, k: int = 5, fold_seed: int = 0,
                      target_recall: float = DEFAULT_TARGET_RECALL, rounds: int = ROUNDS,
                      extractor: Extractor | None = None, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The decision threshold of another numeric path of the NER model (a detector profile, issue 26), by the same
    cross-validation as :func:`train_decider`.

    The shipped decision model is trained on one path's spans (``stored_ner``: cpu-int8's out-of-fold spans of the
    real notes); another path (cpu-fp32, gpu-fp16) gives other spans and scores (``profile_stored``: its
    out-of-fold spans of the corpora that choose the threshold). Each outer fold's model trains on the first path's
    rows of the other folds (as the shipped model does) and scores the profile's rows of the fold; its threshold comes
    from inner folds scored the same way, so the nested estimate is what the profile runs on notes of unseen patients.
    The profile's threshold is the one the pooled out-of-fold scores of its rows choose (recall first), as a
    calibrated probability of the shipped model (``calibration``: its (raw, probability) breakpoints)."""
    from dictionaries.medical import medical_vocabulary
    from processors.decide.cues import Cues
    from processors.evaluation.lockbox import refuse_lockbox

    if k < 3:
        raise ValueError("the nested cross-validation needs k >= 3 folds")
    for c in corpora:
        refuse_lockbox(c.gold, f"profile threshold on {c.name}")
    extractor = extractor or Extractor(Cues(), medical_vocabulary())
    params = {**PARAMS, **(params or {})}

    base, base_fold, _, w = corpora_table(corpora, extractor, stored_ner=stored_ner, steps=steps, options=options,
                                          k=k, fold_seed=fold_seed)
    prof, prof_fold, _, _ = corpora_table([c for c in corpora if c.choose], extractor, stored_ner=profile_stored,
                                       steps=steps, options=options, k=k, fold_seed=fold_seed)
    cv = cross_validate(base, base_fold, k, target_recall, np.zeros(0, dtype=bool), rounds, w, params, scored=prof,
                        scored_fold_of_note=prof_fold)
    phi, skip, _ = prof.tokens.arrays()
    oof, nested, fold_thresholds = cv.oof, cv.nested_best, cv.thresholds
    best_oof = token_max(prof, oof)
    threshold_raw = choose_threshold(best_oof, phi, skip, target_recall)
    xs, ys = calibration
    return {"folds": k, "fold_seed": fold_seed, "target_recall": target_recall, "rounds": rounds,
            "threshold_raw": round(threshold_raw, 6), "fold_thresholds_raw": [round(t, 6) for t in fold_thresholds],
            "decide_threshold": round(float(np.interp(threshold_raw, xs, ys)), 6),
            "candidates": len(prof.rows), "positives": int(np.sum(prof.y)),
            "out_of_fold": summary(best_oof, prof, threshold_raw),
            "nested": summary(nested, prof, 0.0, candidates=best_oof)}


def write_card(folder: Any, notes: str = "") -> Any:
    """``MODEL_CARD.md`` of a decision model folder from its ``decider.json`` (data, folds, features, scores, how to
    retrain); ``notes``: more text for the card (the shipped models' measured figures)."""
    import json
    from pathlib import Path

    meta = json.loads((Path(folder) / "decider.json").read_text(encoding="utf-8"))
    tr = meta["training"]
    lines = [
        f"# {meta.get('model_id', 'decider')}: deidstream decision model",
        "",
        "A LightGBM binary classifier over candidate spans (`processors/decide`): keeps a candidate when its calibrated "
        f"probability of holding an identifier is at least **{meta['threshold']:.4f}** (raw score "
        f"{tr['threshold_raw']:.4f}). Detectors it was trained for: {', '.join(meta['sources'])} "
        f"(steps {', '.join(tr['steps'])}).",
        "",
        "## Data",
        *(f"- {d['name']}: {d['notes']} notes" + (" (chooses the threshold and the calibration)"
                                                  if d['chooses_threshold'] else " (training rows only)")
          for d in meta.get("data", [])),
        *([f"- NER spans: {meta['ner_spans']}"] if meta.get("ner_spans") else []),
        "",
        "## Training",
        f"- {tr['folds']} folds by patient (`processors.evaluation.folds`, seed {tr['fold_seed']}); nested: each outer "
        "fold's threshold from inner folds that never saw it; calibration: isotonic regression on out-of-fold scores",
        f"- threshold: the highest whose out-of-fold token recall is >= {tr['target_recall']} on the threshold's notes "
        "(or the candidates' own recall less 0.005 where they cannot reach it)",
        f"- LightGBM {tr['rounds']} rounds, `{json.dumps(tr['params'])}`",
        f"- features ({len(meta['features'])}): `{', '.join(meta['features'])}`",
        f"- command: `{meta.get('command', 'deidstream train-decider')}`",
        "",
        "## Scores (token level, cross-validated by patient)",
        "| data | candidates | recall (nested) | precision (nested) | fp / fn tokens (nested) | candidate recall |",
        "|---|---|---|---|---|---|",
        *(f"| {c['name']} | {c['candidates']} | {c['nested']['recall']:.4f} | {c['nested']['precision']:.4f} | "
          f"{c['nested']['fp']} / {c['nested']['fn']} | {c['nested']['candidate_recall']:.4f} |"
          for c in tr["corpora"]),
        "",
        "## Most important features (gain)",
        ", ".join(f"{k} {v:,.0f}" for k, v in list(tr["importance"].items())[:15]),
        "",
        "## Retrain on a hospital's own annotations",
        "```",
        "deidstream train-decider --data ours.jsonl=our_labels.yaml --out models/decider-ours",
        "DEID_PIPELINE__OPTIONS='{\"decide\": {\"model_dir\": \"models/decider-ours\"}}' deidstream worker",
        "```",
        "Notes with a `patient_group` are folded by patient; others are each their own group.",
    ]
    if notes:
        lines += ["", notes.strip()]
    path = Path(folder) / "MODEL_CARD.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
