"""`deidstream eval`: score the pipeline (or a predictions file) against gold spans.

Token-level P/R/F1 (a token is PHI if any span overlaps it: "generous"), entity-level recall (every
token covered: "conservative"), per label, with 95% bootstrap confidence intervals over notes. Unless
``--no-metrics``, the notes also go through transform, leakcheck and metrics, so the report has the
per-note recall proxy against true recall (Pearson, Spearman), the mean clinical information retention
metrics and the share of medical terms destroyed. ``--judges`` (deterministic judges) and ``--judge URL,...``
(LLM judges on OpenAI-compatible servers) make a judge panel (majority voting; items without a majority are
reported as discarded).
Writes ``report.json``, ``report.html`` and (when the pipeline ran) ``predictions.jsonl`` into ``--report``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from schemas.errors import ConfigError, InputError
from schemas.labels import Label
from streams.cli._util import (
    EXIT_USAGE,
    OUTPUT_STEPS,
    build_pipeline,
    command_line,
    err,
    git_commit,
    load_settings,
    pipeline_config_for,
    provenance,
    read_provenance,
    run_notes,
    span_record,
)

if TYPE_CHECKING:  # the scoring modules (scipy) and the pipeline load when the command runs
    from processors.evaluation.gold import GoldNote
    from processors.evaluation.scoring import EvalResult, LabelCounts
    from processors.pipeline import Note, Pipeline
    from streams.settings import Settings

console = err
logger = logging.getLogger(__name__)
#: our labels' values: a gold file scored by its own labels (no map) has others ("PTName", "Location")
_OUR_LABELS = frozenset(label.value for label in Label)


def predict(gold_notes: list[Any], *, config: Path | None, steps: str | None, batch_size: int,
            workers: int) -> tuple[dict[str, list[dict[str, Any]]], float]:
    """Run the pipeline's detection steps over the gold notes; spans by note id, and notes/s."""
    notes, rate = run_pipeline(gold_notes, config=config, steps=steps, batch_size=batch_size, workers=workers,
                               with_metrics=False)
    return {n.note_id: [span_record(s) for s in n.spans] for n in notes}, rate


def run_pipeline(gold_notes: Sequence[GoldNote], *, config: Path | None, steps: str | None, batch_size: int,
                 workers: int, with_metrics: bool, run: dict[str, Any] | None = None) -> tuple[list[Note], float]:
    """The pipeline over the gold notes (detection steps, then transform/leakcheck/metrics when
    ``with_metrics``); processed notes in order, and notes/s. ``run``: filled with the run's provenance."""
    settings = load_settings(config)
    cfg = pipeline_config_for(settings, detect_only=True, steps=steps)
    if with_metrics:
        cfg = cfg.model_copy(update={"steps": cfg.steps + OUTPUT_STEPS})
    inputs = [g.to_note_in() for g in gold_notes]
    versions: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    notes = [n for batch in run_notes(settings, cfg, inputs, batch_size=batch_size, workers=workers,
                                      versions=versions, command="eval") for n in batch]
    elapsed = time.perf_counter() - t0
    if run is not None:
        run.update(provenance(command_line(), cfg, versions[0] if versions else None))
    return notes, len(inputs) / elapsed if elapsed > 0 else 0.0


def file_sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: Notes listed in each of the report's "most misses" / "most false positives" tables.
WORST_NOTES = 10


def worst_notes(result: EvalResult, gold_notes: Sequence[GoldNote], preds: Mapping[str, Sequence[Any]], *,
                show_text: bool, n: int = WORST_NOTES) -> dict[str, list[dict[str, Any]]]:
    """The notes with the most missed identifier tokens and with the most false-positive tokens: note id and
    counts; with ``show_text`` also the missed / falsely marked words (note text: off by default)."""
    from processors.evaluation.scoring import tokens

    by_id = {g.id: g for g in gold_notes}

    def words(note_id: str, which: str) -> list[str]:
        g = by_id[note_id]
        pred = [(int(p["start"]), int(p["end"])) if isinstance(p, Mapping) else (p.start, p.end)
                for p in preds.get(note_id, ())]
        out = []
        for a, b in tokens(g.text):
            is_gold = any(s.start < b and a < s.end for s in g.spans)
            is_pred = any(s < b and a < e for s, e in pred)
            if (which == "fn" and is_gold and not is_pred) or (which == "fp" and is_pred and not is_gold):
                out.append(g.text[a:b])
        return out

    tables: dict[str, list[dict[str, Any]]] = {}
    for key in ("fn", "fp"):
        ranked = sorted((c for c in result.per_note if getattr(c, key) > 0),
                        key=lambda c: (-getattr(c, key), c.id))[:n]
        rows = []
        for c in ranked:
            row: dict[str, Any] = {"id": c.id, "tokens": c.tokens, "gold_tokens": c.tp + c.fn, "fn": c.fn, "fp": c.fp,
                                   "entities": c.entities, "entities_missed": c.entities - c.entities_found}
            if show_text:
                row["words"] = words(c.id, key)
            rows.append(row)
        tables["most_missed" if key == "fn" else "most_false_positives"] = rows
    return tables


def threshold_sweep(gold_notes: Sequence[GoldNote], *, config: Path | None, steps: str | None, batch_size: int,
                    workers: int, source: str, values: Sequence[float]) -> dict[str, Any]:
    """Precision and recall when the ensemble's threshold for ``source`` takes each of ``values``: the
    detection steps before the ensemble run once, the ensemble's pure policy is applied per value."""
    from processors.ensemble import Ensemble, decide
    from processors.evaluation.scoring import evaluate
    settings = load_settings(config)
    chosen = pipeline_config_for(settings, detect_only=True, steps=steps)
    if "ensemble" not in chosen.steps:
        raise InputError("--sweep needs the ensemble step among the detection steps")
    before = ",".join(s for s in chosen.steps if s != "ensemble")
    ens = Ensemble.Config.model_validate(chosen.options.get("ensemble", {}))
    notes, _ = run_pipeline(gold_notes, config=config, steps=before, batch_size=batch_size, workers=workers,
                            with_metrics=False)
    rows = []
    for value in values:
        thresholds = {**ens.thresholds, source: value}
        preds = {}
        for n in notes:
            if n.error is None:
                kept, _rejected = decide(n.spans, thresholds, ens.default_threshold, ens.min_votes)
                preds[n.note_id] = [span_record(s) for s in kept]
        result = evaluate(gold_notes, preds)
        rows.append({"threshold": value, "precision": result.precision, "recall": result.recall, "f1": result.f1,
                     "entity_recall": result.entity_recall, "fp": result.fp, "fn": result.fn})
    return {"source": source, "steps_before_ensemble": before, "rows": rows}


def read_predictions(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Spans by note id from a JSONL file of ``{"note_id" (or "id"), "spans"}`` (``detect``'s output); a missing file
    is E110, a line that is no JSON object E102 / E103, with the file and line named."""
    if not path.is_file():
        raise InputError(f"{path}: input path does not exist", code="E110")
    out: dict[str, list[dict[str, Any]]] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rec = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"{path.name}:{n}: invalid JSON at column {getattr(exc, 'colno', '?')}",
                                     code="E102") from None
                if not isinstance(rec, dict):
                    raise InputError(f"{path.name}:{n}: a prediction must be a JSON object", code="E103")
                out[str(rec.get("note_id", rec.get("id")))] = rec.get("spans", [])
    return out


def notes_from_predictions(gold_notes: Sequence[GoldNote], preds: Mapping[str, Sequence[Mapping[str, Any]]]
                           ) -> list[Note]:
    """Notes carrying predicted spans (our labels), ready for the output steps."""
    from processors.pipeline import Note
    from schemas.models import Span

    notes = []
    for g in gold_notes:
        spans = []
        for rec in preds.get(g.id, ()):
            try:
                spans.append(Span(start=int(rec["start"]), end=int(rec["end"]), label=rec["label"],
                                  subtype=rec.get("subtype"), score=float(rec.get("score", 1.0)),
                                  source=str(rec.get("source") or "pred")))
            except (KeyError, ValueError, TypeError):
                raise InputError(f"prediction for note {g.id!r}: invalid span (needs start, end and one of our "
                                 "labels)") from None
            if spans[-1].end > len(g.text):
                raise InputError(f"prediction for note {g.id!r}: span beyond the text")
        notes.append(Note(input=g.to_note_in(), spans=tuple(spans)))
    return notes


def run_output_steps(notes: Sequence[Note], *, config: Path | None, batch_size: int) -> list[Note]:
    """transform, leakcheck and metrics over notes that already carry their spans."""
    settings = load_settings(config)
    cfg = settings.pipeline_config().model_copy(update={"steps": OUTPUT_STEPS})
    pipeline: Pipeline = build_pipeline(settings, cfg)
    out: list[Note] = []
    for i in range(0, len(notes), batch_size):
        out.extend(pipeline.run_notes(notes[i:i + batch_size]))
    return out


def report_dict(result: EvalResult, *, gold: Path, n_boot: int, seed: int, extra: dict[str, Any]) -> dict[str, Any]:
    from processors.evaluation.scoring import bootstrap_ci

    rep = result.to_dict()
    rep["gold"] = gold.name
    rep["bootstrap"] = {"resamples": n_boot, "seed": seed, "ci95": bootstrap_ci(result.per_note, n=n_boot, seed=seed)}
    rep.update(extra)
    return rep


def per_note_labels(gold_notes: Sequence[GoldNote], preds: Mapping[str, Sequence[Any]]
                    ) -> list[dict[str, LabelCounts]]:
    """Each note's per-label counts (the unit of the per-label bootstrap)."""
    from processors.evaluation.scoring import evaluate_note

    out = []
    for g in gold_notes:
        counts: dict[str, LabelCounts] = {}
        evaluate_note(g, preds.get(g.id, ()), counts)
        out.append(counts)
    return out


def note_rows(result: EvalResult, gold_notes: Sequence[GoldNote], notes: Sequence[Note] | None, *,
              threshold: float = 0.85, cache_dir: Path | None = None) -> list[dict[str, Any]]:
    """One row per note: gold counts, true recall, and (with processed notes) the recall proxy, the
    string-based recall over GOLD entities (``lr_gold``), CIR metrics and medical terms destroyed."""
    from processors.metrics.cir import medical_term_changes
    from processors.metrics.proxy import Entity, entity_lsis, lr_at
    from processors.spans import OffsetMap
    from schemas.labels import is_direct

    by_id = {n.note_id: n for n in notes or ()}
    vocab = None
    rows: list[dict[str, Any]] = []
    for c, g in zip(result.per_note, gold_notes, strict=True):
        row: dict[str, Any] = {
            "id": c.id, "kind": c.kind, "tokens": c.tokens, "tp": c.tp, "fp": c.fp, "fn": c.fn,
            "entities": c.entities, "entities_found": c.entities_found,
            "token_recall": c.tp / (c.tp + c.fn) if c.tp + c.fn else None,
            "precision": c.tp / (c.tp + c.fp) if c.tp + c.fp else None,
            "entity_recall": c.entities_found / c.entities if c.entities else None,
            # the truth the retention metrics estimate: gold non-identifier tokens the output kept
            "number_retention_true": 1 - c.numbers_changed / c.number_tokens if c.number_tokens else None,
            "word_retention_true": 1 - c.words_changed / c.word_tokens if c.word_tokens else None,
            # the truth the residual-risk score estimates: gold identifiers the output did not fully remove
            "missed_entities": c.entities - c.entities_found,
        }
        note = by_id.get(g.id)
        m = note.metrics if note is not None else None
        if note is not None and note.output is not None and m is not None:
            r, k = m.recall, m.retention
            if r is not None:
                row.update(lr=r.lr, lrdi=r.lrdi, lrqi=r.lrqi, alid=r.alid, known=r.known, verbatim=r.verbatim)
            if k is not None:
                row.update(jsc=k.jsc, nsdcg=k.nsdcg, cire=k.cire, medical_term_retention=k.medical_term_retention,
                           number_retention=k.number_retention, medical_terms=k.medical_terms,
                           word_retention=k.word_retention, numbers_lost=k.numbers_lost,
                           numbers_removed=k.numbers_removed, words_lost=k.words_lost, words_removed=k.words_removed)
            if m.risk is not None:
                row.update(risk_score=m.risk.score, risk_expected=m.risk.expected, risky=m.risk.risky,
                           risk_names=m.risk.names, risk_proper_nouns=m.risk.proper_nouns,
                           risk_identifier_numbers=m.risk.identifier_numbers, risk_rejected_mass=m.risk.rejected_mass,
                           risk_ner_mass=m.risk.ner_mass, kchars=m.risk.kchars, risk_detected=m.risk.detected)
            row["leak"] = note.leak
            offsets = OffsetMap.for_note(note.text, note.output, note.replacements)
            # a gold label of the corpus's own (no label map) is none of ours: only LRDI asks, and lr_gold does not
            ents = [Entity(s.start, s.end, s.label, s.label in _OUR_LABELS and is_direct(s.label, s.subtype))
                    for s in g.spans]
            lsis = [x for x, _ in entity_lsis(note.text, note.output, ents, offsets)]
            row["lr_gold"] = lr_at(lsis, threshold)
            if vocab is None:
                from dictionaries.medical import medical_vocabulary

                vocab = medical_vocabulary(cache_dir)
            changes = medical_term_changes(note, vocab)
            destroyed = [(s, e) for s, e, d in changes if d]
            row["medical_terms_destroyed"] = len(destroyed)
            row["medical_terms_destroyed_wrongly"] = sum(
                1 for s, e in destroyed if not any(gs.start < e and s < gs.end for gs in g.spans))
        rows.append(row)
    return rows


def _versions(notes: Sequence[Note] | None) -> dict[str, Any] | None:
    for n in notes or ():
        if n.metrics is not None:
            versions: dict[str, Any] = n.metrics.versions.model_dump(mode="json")
            return versions
    return None


def print_table(rep: dict[str, Any]) -> None:
    table = Table(title=f"{rep['gold']}: {rep['notes']} notes, {rep['tokens']} tokens")
    for col in ("label", "gold tokens", "recall", "precision", "F1", "entity recall"):
        table.add_column(col, justify="right" if col != "label" else "left")

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    def pct(x: float | None, scale: float = 1.0) -> str:
        return "-" if x is None else f"{x * scale:.1f}%"

    for label, c in rep["per_label"].items():
        table.add_row(label, str(c["gold_tokens"]), f(c["recall"]), f(c["precision"]), f(c["f1"]),
                      f(c["entity_recall"]))
    ci = rep["bootstrap"]["ci95"]
    table.add_row("ALL", str(rep["tp"] + rep["fn"]), f(rep["recall"]), f(rep["precision"]), f(rep["f1"]),
                  f(rep["entity_recall"]), style="bold")
    console.print(table)
    if ci.get("recall"):
        console.print(f"95% CI recall {ci['recall'][0]:.3f}-{ci['recall'][1]:.3f}, "
                      f"precision {ci['precision'][0]:.3f}-{ci['precision'][1]:.3f}", highlight=False)
    content = rep.get("content_changed")
    if content:
        console.print(
            f"non-identifier tokens the output changed: numbers {content['numbers_changed']} of "
            f"{content['number_tokens']} ({f(content['numbers_changed_share'])}, in "
            f"{content['notes_with_a_number_changed']} of {rep['notes']} notes), words {content['words_changed']} "
            f"of {content['word_tokens']} ({f(content['words_changed_share'])})", highlight=False)
    sweep = rep.get("sweep")
    if sweep:
        console.print(f"threshold sweep, source {sweep['source']}: " + "; ".join(
            f"{r['threshold']:g}: P {f(r['precision'])} R {f(r['recall'])}" for r in sweep["rows"]), highlight=False)
    summary = rep.get("summary")
    if summary:
        corr = summary["proxy_vs_true_recall"]["token_recall"]
        cir = summary["cir"]
        med = summary["medical_terms"]
        console.print(
            f"recall proxy LR vs token recall: Pearson {f(corr['pearson'])}, Spearman {f(corr['spearman'])} "
            f"(n={corr['n']}); mean JSC {pct(cir['mean_jsc'])}, NSDCG {pct(cir['mean_nsdcg'])}, "
            f"CIRE {pct(cir['mean_cire'], 100)}; medical terms destroyed {pct(med['share_destroyed'], 100)}",
            highlight=False)
    from processors.evaluation.glossary import check_targets, tracking_sentences

    for t in check_targets(rep):
        if t["status"] != "n/a":
            console.print(f"target {t['what']} {t['target']}: {f(t['value'])} {t['status']}", highlight=False)
    for sentence in tracking_sentences(summary):
        console.print(f"[yellow]{sentence}[/]", highlight=False)


def judge_panel(gold_notes: Sequence[GoldNote], preds: Mapping[str, Sequence[Any]], notes: Sequence[Note] | None, *,
                judges: str | None, llm_judges: str | None, settings: Settings, model: str | None, samples: int,
                temperature: float | None, threshold: float) -> dict[str, Any]:
    """The judge panel's report: the deterministic ``judges`` and one LLM judge per ``llm_judges`` URL, all in
    one panel (one vote each). The LLM judges' clients take the API key, timeout, retries and concurrency
    from the ``llm`` settings. Usage errors exit 2."""
    from rich.markup import escape

    from processors.evaluation.judges import (
        Judge,
        build_judges,
        build_llm_judges,
        close_judges,
        panel_items,
        run_panel,
    )
    from processors.spans import OffsetMap

    llm = settings.llm
    panel: list[Judge] = []
    try:
        panel.extend(build_judges(judges.split(",")) if judges else [])
        if llm_judges:
            panel.extend(build_llm_judges(
                llm_judges.split(","), default_model=model or llm.model, api_key=llm.api_key,
                timeout_s=llm.timeout_s, max_retries=llm.max_retries, concurrency=llm.concurrency,
                samples=samples, temperature=temperature, threshold=threshold))
        if not panel:
            raise ValueError("the judge panel needs at least one judge")
    except ValueError as exc:
        close_judges(panel)
        console.print(f"[red]error[/] {escape(str(exc))}", markup=True, highlight=False)
        raise typer.Exit(2) from None
    outputs = {n.note_id: (n.output, OffsetMap.for_note(n.text, n.output, n.replacements))
               for n in notes or () if n.output is not None}
    items = panel_items({g.id: g.text for g in gold_notes}, {g.id: g.spans for g in gold_notes}, preds,
                        outputs=outputs)
    try:
        result = run_panel(panel, items, threshold)
    finally:
        close_judges(panel)
    return result.to_dict()


def print_panel(panel: Mapping[str, Any]) -> None:
    """One line for the panel, one per judge that abstained (with the reasons)."""

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    console.print(f"judge panel ({len(panel['judges'])} judges, {panel.get('items', '?')} items): recall "
                  f"{f(panel['recall'])}, precision {f(panel['precision'])}, discarded (no majority) "
                  f"{panel['discarded']}", highlight=False)
    for name, row in (panel.get("per_judge") or {}).items():
        reasons = row.get("abstentions") or {}
        if row.get("abstained"):
            why = ", ".join(f"{k} {v}" for k, v in reasons.items())
            console.print(f"  {name}: {row['votes']} votes, {row['abstained']} abstained"
                          + (f" ({why})" if why else ""), highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_command(
        gold: Annotated[Path, typer.Option("--gold", help="gold JSONL (shared eval format)")],
        report: Annotated[Path, typer.Option("--report", help="folder for report.json / report.html")],
        pred: Annotated[Path | None, typer.Option("--pred", help="predictions JSONL (detect output)")] = None,
        labels: Annotated[str | None, typer.Option(
            "--labels", help="label map: presidio | meddocan | physionet | MAP.yaml (none: the gold's labels if "
                             "they are not ours, binary precision/recall and per-label recall by them)")] = None,
        config: Annotated[Path | None, typer.Option("--config", help="YAML settings file")] = None,
        steps: Annotated[str | None, typer.Option("--steps", help="comma-separated detection steps")] = None,
        limit: Annotated[int | None, typer.Option("--limit", min=1, help="first N gold notes only")] = None,
        bootstrap: Annotated[int, typer.Option("--bootstrap", min=1, help="bootstrap resamples")] = 100,
        seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
        batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 64,
        workers: Annotated[int, typer.Option("--workers", min=1)] = 1,
        metrics: Annotated[bool, typer.Option("--metrics/--no-metrics",
                                              help="also transform + per-note metrics (recall proxy, CIR)")] = True,
        judges: Annotated[str | None, typer.Option(
            "--judges", help="deterministic judges of the panel, comma-separated: entity, partial, any, string")] = None,
        judge: Annotated[str | None, typer.Option(
            "--judge", help="LLM judges, comma-separated: URL or URL@MODEL of OpenAI-compatible servers (vLLM), one "
                            "judge each; they join the --judges in one panel. API key, timeout, retries and "
                            "concurrency: the llm settings")] = None,
        judge_model: Annotated[str | None, typer.Option(
            "--judge-model", help="model of a --judge URL without @MODEL (default: the setting llm.model)")] = None,
        judge_samples: Annotated[int, typer.Option(
            "--judge-samples", min=1, max=16, help="answers each LLM judge samples per item; it votes with their "
                                                   "majority")] = 1,
        judge_temperature: Annotated[float | None, typer.Option(
            "--judge-temperature", min=0.0, max=2.0, help="LLM judges' sampling temperature (default 0 for one "
                                                          "sample, 0.7 for several)")] = None,
        judge_threshold: Annotated[float, typer.Option("--judge-threshold", min=0.0, max=1.0,
                                                       help="a verdict needs more than this share of votes")] = 0.5,
        html_report: Annotated[bool, typer.Option("--html/--no-html", help="write report.html")] = True,
        sweep: Annotated[str | None, typer.Option(
            "--sweep", help="precision-recall trade-off: SOURCE=V1,V2,... (e.g. ner=0.15,0.5,0.9) re-applies the "
                            "ensemble with that source's threshold at each value")] = None,
        show_text: Annotated[bool, typer.Option(
            "--show-text", help="list the missed and falsely marked words of the notes with the most errors in the "
                                "report (note text: off by default; never with --lockbox)")] = False,
        lockbox: Annotated[bool, typer.Option(
            "--lockbox", help="score only the gold file's lockbox notes (PhysioNet / MEDDOCAN dev): aggregates only, "
                              "no per-note rows, predictions or HTML; without it, lockbox notes are left out")] = False,
    ) -> None:
        """Token/entity precision-recall against gold, per label, with bootstrap CIs; recall proxy and
        clinical information retention per note; report.json + report.html."""
        from processors.evaluation.gold import load_gold, load_label_map
        from processors.evaluation.lockbox import split as split_lockbox
        from processors.evaluation.report import label_bootstrap, summarise, write_reports
        from processors.evaluation.scoring import evaluate

        # a wrong gold, label map or predictions file fails first: exit 2, no model loaded, the error's code and
        # place (never note text) instead of a traceback
        try:
            label_map = load_label_map(labels) if labels else None
            gold_notes = load_gold(gold, label_map, own_labels=label_map is None)
            preds = read_predictions(pred) if pred is not None else {}
        except (InputError, ConfigError) as exc:
            console.print(f"[red]error[/] {exc}", markup=True, highlight=False)
            raise typer.Exit(EXIT_USAGE) from None
        design, box = split_lockbox(gold_notes)
        if lockbox:
            if not box:
                console.print("[red]error[/] --lockbox: the gold file holds no lockbox notes", markup=True)
                raise typer.Exit(2)
            gold_notes = box
            judges = judge = sweep = None
            html_report = False
            show_text = False
        elif box:
            console.print(f"{len(box)} lockbox notes left out (scored in aggregate only, with --lockbox)",
                          highlight=False)
            gold_notes = design
        if limit is not None:
            gold_notes = gold_notes[:limit]
        foreign = sorted({s.label for g in gold_notes for s in g.spans} - {str(x) for x in Label})
        if label_map is None and foreign:
            console.print(f"[yellow]gold labels without a map ({', '.join(foreign)}): token precision/recall are "
                          "label-free; per-label recall uses the gold's own labels[/]", highlight=False)
        extra: dict[str, Any] = {"labels": labels if labels else ("gold's own" if foreign else None)}
        # the gold scheme: the labels the gold can hold (a label map's targets, else the labels in the gold file)
        scheme = ({str(v).split("/")[0] for v in label_map.values() if v} if label_map is not None
                  else {s.label for g in gold_notes for s in g.spans})
        extra["gold_labels"] = sorted(scheme)
        extra["gold_sha256"] = file_sha256(gold)
        extra["eval_run"] = {"command": command_line(), "git_commit": git_commit() or "unknown (not a git checkout)"}
        run: dict[str, Any] = {}
        notes: list[Note] | None = None
        if pred is not None:
            extra["predictions"] = pred.name
            run = read_provenance(pred) or {
                "model": "unknown (no " + pred.name + ".run.json beside the predictions: made by another tool, or "
                         "before detect wrote one)"}
            if metrics:
                notes = run_output_steps(notes_from_predictions(gold_notes, preds), config=config,
                                         batch_size=batch_size)
        else:
            notes, rate = run_pipeline(gold_notes, config=config, steps=steps, batch_size=batch_size,
                                       workers=workers, with_metrics=metrics, run=run)
            failed = [n for n in notes if n.error is not None]
            if failed:
                console.print(f"[yellow]{len(failed)} notes failed in the pipeline (counted as predicting "
                              "nothing)[/]", markup=True)
            preds = {n.note_id: [span_record(s) for s in n.spans] for n in notes if n.error is None}
            extra["notes_per_s"] = round(rate, 1)
        result = evaluate(gold_notes, preds)
        extra["provenance"] = run
        rep = report_dict(result, gold=gold, n_boot=bootstrap, seed=seed, extra=extra)
        rep["per_label_ci95"] = label_bootstrap(per_note_labels(gold_notes, preds), n=bootstrap, seed=seed)
        settings = load_settings(config)
        threshold = float(settings.pipeline.options.get("metrics", {}).get("threshold", 0.85))
        rows = note_rows(result, gold_notes, notes, threshold=threshold, cache_dir=settings.cache_dir)
        if notes is not None and metrics:
            rep["summary"] = summarise(rows)
            rep["versions"] = _versions(notes)
        if judges or judge:
            rep["judges"] = judge_panel(
                gold_notes, preds, notes, judges=judges, llm_judges=judge, settings=settings, model=judge_model,
                samples=judge_samples, temperature=judge_temperature, threshold=judge_threshold)
        if sweep:
            source, _, values = sweep.partition("=")
            try:
                points = [float(v) for v in values.split(",") if v.strip()]
            except ValueError:
                points = []
            if not source or not points:
                console.print("[red]error[/] --sweep takes SOURCE=V1,V2,... (numbers)", markup=True)
                raise typer.Exit(2)
            rep["sweep"] = threshold_sweep(gold_notes, config=config, steps=steps, batch_size=batch_size,
                                           workers=workers, source=source.strip(), values=points)
        if lockbox:  # aggregates only: nothing per note, no spans
            rep.pop("summary", None)
            paths = write_reports({k: v for k, v in rep.items() if k != "per_note"}, [], report, html_report=False)
            print_table(rep)
            console.print(f"lockbox: {len(gold_notes)} notes, aggregates only; wrote {paths[0]}", highlight=False)
            return
        rep["per_note"] = rows
        rep["worst_notes"] = worst_notes(result, gold_notes, preds, show_text=show_text)
        rep["show_text"] = show_text
        if pred is None and notes is not None:
            report.mkdir(parents=True, exist_ok=True)
            with (report / "predictions.jsonl").open("w", encoding="utf-8") as fh:
                for n in notes:
                    fh.write(json.dumps({"note_id": n.note_id, "spans": preds.get(n.note_id, [])}) + "\n")
        paths = write_reports(rep, rows, report, html_report=html_report)
        print_table(rep)
        if rep.get("judges"):
            print_panel(rep["judges"])
        console.print(f"wrote {', '.join(str(p) for p in paths)}", highlight=False)
