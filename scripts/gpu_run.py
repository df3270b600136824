"""One prepared GPU run: the NER stage and the whole default pipeline with N processes sharing one GPU.

For each process count N (``--procs 1,2,4``): N processes start at once (spawn; each pins its CPU threads
to the cores / N and initialises CUDA itself), build the default pipeline once (the NER model on the GPU with
the detector profile ``auto`` picks there: ``gpu-fp16``) and warm up; then, all together after a barrier,

1. **ner**: the pipeline's NER step alone (tokenizing, windows, forward, decoding, the function-word filter)
   over each process's share of the notes, in batches of ``--ner-batch`` notes;
2. **pipeline**: the whole default pipeline (regex, ner, dictionary, recovery, decide, ensemble, transform,
   leakcheck, metrics) over the same notes, in batches of ``--pipeline-batch`` notes.

Each phase stops after its notes or ``--seconds`` of measurement, whichever comes first. Reported per phase:
notes/s of all processes together (notes done over the phase's wall time), p50/p99 batch latency, the GPU's
busy fraction (NVML utilisation sampled every 50 ms in the parent while the phase runs; nvidia-smi when NVML
is missing), the forward pass's share of the stage (CUDA events around every model call over the stage's own
time in each process), ms per note by pipeline step, and each process's load time. Notes: fixed-length
synthetic notes (``deidstream bench``'s, ``--chars`` characters), generated here or read from ``--notes`` (the
device run reads the ones ``scripts/gpu_pack.py`` wrote: the generator's name lists are not installed there).

The ner phase runs its notes again until ``--seconds`` have passed (``--no-ner-cycle``: once): the step keeps
only its words' pieces of a text (a worker's stream repeats words too), and with 16 processes each one's share of the notes lasts only a few batches. ``--phases ner`` measures
the NER stage alone (settings such as ``--ner-batch`` compared in one call).

``--dry-run``: the same on the CPU with few notes (no cycling) (tests/unit/scripts/test_gpu_run.py runs it). The device run
(README, Speed) is ``scripts/gpu_run.sh``, which unpacks what ``scripts/gpu_pack.sh`` prepared and runs this.

    python scripts/gpu_run.py [--procs 1,2,4] [--n 12000] [--chars 1000] [--ner-batch 256]
        [--pipeline-batch 256] [--seconds 15] [--dry-run] [-o OUT.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class TimedForward:
    """Wraps the model (or its trace) so that every forward call is timed: CUDA events on a GPU (read once
    at the end of a phase, no synchronisation in between), the wall clock on a CPU."""

    def __init__(self, inner: Any, cuda: bool) -> None:
        self.inner, self.cuda = inner, cuda
        self.config = getattr(inner, "config", None)
        self.events: list[tuple[Any, Any]] = []
        self.cpu_s = 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.cuda:
            import torch

            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = self.inner(*args, **kwargs)
            end.record()
            self.events.append((start, end))
            return out
        t = time.perf_counter()
        out = self.inner(*args, **kwargs)
        self.cpu_s += time.perf_counter() - t
        return out

    def take_seconds(self) -> float:
        if self.cuda:
            import torch

            torch.cuda.synchronize()
            total = sum(a.elapsed_time(b) for a, b in self.events) / 1000.0
            self.events.clear()
            return total
        total, self.cpu_s = self.cpu_s, 0.0
        return total


class HostTimers:
    """Host work of the NER step a GPU worker does besides the model: the word pieces of the notes (the tokenizer, or
    its fast path, :mod:`processors.ner.pieces`) and the decoding of spans (wall clock, summed per phase).
    Installed on the loaded model's piece encoder and on the step's decoder by :meth:`install`; what is left of the
    stage is copying, scattering, waiting for the GPU and Python between."""

    def __init__(self) -> None:
        self.tokenize_s = 0.0
        self.decode_s = 0.0

    def take(self) -> dict[str, float]:
        out = {"tokenize_s": self.tokenize_s, "decode_s": self.decode_s}
        self.tokenize_s = self.decode_s = 0.0
        return out

    def install(self, loaded: Any) -> None:
        from processors.ner import step

        pieces = loaded.pieces
        if pieces is None:
            raise RuntimeError("the loaded NER model has no piece encoder to time")
        pieces.encode = self._timed(pieces.encode, "tokenize_s")  # this instance only: the process's one model
        step.decode_spans = self._timed(step.decode_spans, "decode_s")  # the step calls the module's function

    def _timed(self, fn: Any, total: str) -> Any:
        """``fn``, adding the wall time of each call to this object's attribute ``total``."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            out = fn(*args, **kwargs)
            setattr(self, total, getattr(self, total) + time.perf_counter() - t)
            return out

        return timed


def _phase(name: str, work: Any, batches: list[list[Any]], seconds: float, timers: list[TimedForward],
           stage_ms: dict[str, float] | None, cycle: bool = False, host: HostTimers | None = None) -> dict[str, Any]:
    """``work`` over ``batches`` until they are done or ``seconds`` have passed; ``cycle``: over them again and again
    until ``seconds`` have passed (of a text it has seen the NER step keeps only its words' pieces, which a worker's
    stream repeats too, so a note run again is nearly the same work; the pipeline's memos of candidates and words
    would not be, so its phase never cycles). Besides the wall clock: the
    process's CPU time (all its threads), and ``host``'s tokenizing and decoding time."""
    lat: list[float] = []
    done = 0
    for t in timers:
        t.take_seconds()  # drop the warm-up's
    if host is not None:
        host.take()
    cpu0 = time.process_time()
    started = time.perf_counter()
    for batch in (itertools.cycle(batches) if cycle and batches else batches):
        t0 = time.perf_counter()
        out = work(batch)
        lat.append(time.perf_counter() - t0)
        done += len(batch)
        if stage_ms is not None:
            for note in out:
                for step, ms in note.stage_ms:
                    stage_ms[step] = stage_ms.get(step, 0.0) + ms
        if time.perf_counter() - started >= seconds:
            break
    busy = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    forward = sum(t.take_seconds() for t in timers)
    return {"phase": name, "notes": done, "busy_s": busy, "batch_latency_s": lat, "forward_s": forward, "cpu_s": cpu,
            **(host.take() if host is not None else {"tokenize_s": 0.0, "decode_s": 0.0})}


def read_notes(path: Path, n: int) -> list[Any]:
    """The first ``n`` notes of a JSONL file (``.xz`` compressed or not) of ``{"note_id", "text"}``."""
    import lzma

    from schemas.models import NoteIn

    opener = lzma.open if path.suffix == ".xz" else open
    notes = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            notes.append(NoteIn.model_validate_json(line))
            if len(notes) >= n:
                break
    return notes


def worker(rank: int, procs: int, args: dict[str, Any], barrier: Any, results: Any) -> None:
    """One process: pin threads, build the pipeline, warm up, then the two phases between barriers."""
    from processors.runtime import pin_threads, threads_per_process

    threads = threads_per_process(procs)
    pin_threads(threads)
    t0 = time.perf_counter()
    try:
        import torch

        from processors.pipeline import Note, Pipeline, PipelineConfig, SharedPolicy
        from streams.cli.bench import fixed_length_notes

        # no language routes: the notes are English (none would be routed), and the pack need not carry the
        # language identifier (py3langid's model, 4.5 MB) or load the Spanish route's models in every process
        cfg = PipelineConfig(profile=args["profile"], options={"ner": {"batch_size": args["ner_windows"]}},
                             policy=SharedPolicy(language_routes=()))
        pipeline = Pipeline.from_config(cfg)
        ner = next(p for p in pipeline.processors if p.name == "ner")
        loaded: Any = ner.model  # type: ignore[attr-defined]
        cuda = str(loaded.device).startswith("cuda")
        timers = [TimedForward(loaded.model, cuda)]
        object.__setattr__(loaded, "model", timers[0])
        if loaded.traced is not None:
            timers.append(TimedForward(loaded.traced, cuda))
            object.__setattr__(loaded, "traced", timers[1])
        host = HostTimers()
        host.install(loaded)
        if args["notes"]:  # written by scripts/gpu_pack.py: the device has no synthetic generator's data
            every = read_notes(Path(args["notes"]), args["n"])
            notes, warm = every[rank::procs], every[:8]
        else:
            notes = fixed_length_notes(max(1, args["n"] // procs), args["chars"], seed=2024 + rank)  # its share
            warm = fixed_length_notes(8, args["chars"], seed=7)
        pipeline.run(warm)
        if cuda:
            torch.cuda.synchronize()
        load_s = time.perf_counter() - t0
        info = {"rank": rank, "pid": os.getpid(), "threads": threads, "load_s": round(load_s, 2),
                "device": str(loaded.device), "profile": pipeline.versions().profile,
                "quantized": loaded.quantized, "steps": list(pipeline.step_names)}
    except BaseException as exc:  # reported by the parent; never a hang at the barrier
        results.put({"rank": rank, "error": f"{type(exc).__name__}: {exc}"})
        barrier.abort()
        raise
    out: dict[str, Any] = {**info, "phases": {}}

    if "ner" in args["phases"]:
        nb = args["ner_batch"]
        ner_batches = [[Note(input=n) for n in notes[i: i + nb]] for i in range(0, len(notes), nb)]
        barrier.wait()  # ner phase starts
        out["phases"]["ner"] = _phase("ner", ner.process_batch, ner_batches, args["seconds"], timers, None,
                                      cycle=args["ner_cycle"], host=host)
        barrier.wait()  # ner phase ends
    if "pipeline" in args["phases"]:
        pb = args["pipeline_batch"]
        stage_ms: dict[str, float] = {}
        pipe_batches = [notes[i: i + pb] for i in range(0, len(notes), pb)]
        barrier.wait()  # pipeline phase starts
        out["phases"]["pipeline"] = _phase("pipeline", pipeline.run, pipe_batches, args["seconds"], timers, stage_ms,
                                           host=host)
        out["phases"]["pipeline"]["stage_ms_total"] = stage_ms
        barrier.wait()  # pipeline phase ends
    results.put(out)


class GpuSampler:
    """GPU utilisation (percent of time a kernel ran) sampled every ``every_s`` in a thread: NVML, else
    nvidia-smi, else nothing (CPU)."""

    def __init__(self, every_s: float = 0.05) -> None:
        self.every_s, self.samples, self.source = every_s, [], None  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._read: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self._read = lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            self.source = "nvml"
        except Exception:  # noqa: BLE001 - no NVML: try nvidia-smi
            try:
                subprocess.run(["nvidia-smi", "-L"], capture_output=True, check=True, timeout=10)
                self._read = self._smi
                self.source = "nvidia-smi"
            except Exception:  # noqa: BLE001 - no GPU tooling (CPU dry run)
                self._read = None

    @staticmethod
    def _smi() -> float:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
        return float(out.split()[0])

    def __enter__(self) -> GpuSampler:
        self.samples = []
        self._stop.clear()
        if self._read is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.samples.append(self._read())
            except Exception:  # noqa: BLE001 - a missed sample is not fatal
                pass

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._read is not None:
            self._thread.join(5)

    def busy_fraction(self) -> float | None:
        return round(statistics.mean(self.samples) / 100.0, 3) if self.samples else None


def run_procs(procs: int, args: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs + 1, timeout=timeout_s)
    results = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(r, procs, args, barrier, results)) for r in range(procs)]
    t_start = time.perf_counter()
    for p in ps:
        p.start()
    sampler = GpuSampler()
    walls: dict[str, float] = {}
    busy: dict[str, float | None] = {}
    try:
        for k, phase in enumerate(args["phases"]):
            barrier.wait()  # every process loaded (first) / ready for the phase
            if k == 0:
                loaded_after = time.perf_counter() - t_start
            t0 = time.perf_counter()
            with sampler:
                barrier.wait()
            walls[phase] = time.perf_counter() - t0
            busy[phase] = sampler.busy_fraction()
    except Exception:  # noqa: BLE001 - a worker failed: report its error below
        loaded_after = float("nan")
    outs = []
    for _ in range(procs):
        try:
            outs.append(results.get(timeout=30))
        except Exception:  # noqa: BLE001
            break
    for p in ps:
        p.join(30)
        if p.is_alive():
            p.kill()
    errors = [o["error"] for o in outs if "error" in o]
    if errors or len(outs) < procs:
        return {"procs": procs, "error": errors or ["a worker process did not report"]}
    report: dict[str, Any] = {"procs": procs, "all_loaded_after_s": round(loaded_after, 2),
                              "processes": [{k: o[k] for k in ("rank", "pid", "threads", "load_s", "device",
                                                               "profile", "quantized")} for o in outs],
                              "steps": outs[0]["steps"]}
    for phase in args["phases"]:
        ph = [o["phases"][phase] for o in outs]
        notes = sum(x["notes"] for x in ph)
        lat = [v for x in ph for v in x["batch_latency_s"]]
        busy_s = sum(x["busy_s"] for x in ph)  # the processes' wall time in the phase, which each share divides
        entry: dict[str, Any] = {
            "notes": notes, "wall_s": round(walls[phase], 3),
            "notes_per_s": round(notes / walls[phase], 1) if walls[phase] > 0 else None,
            "batches": len(lat),
            "batch_latency_p50_ms": round(1000 * (percentile(lat, 0.5) or 0), 2),
            "batch_latency_p99_ms": round(1000 * (percentile(lat, 0.99) or 0), 2),
            "gpu_busy_fraction": busy[phase], "gpu_busy_source": sampler.source,
            "forward_share_of_stage": round(sum(x["forward_s"] for x in ph) / busy_s, 4),
            # the processes' CPU time over their wall time (1.0: a process never waited; more: other threads of it
            # ran too), and the NER step's tokenizer and decoder shares of the wall time
            "cpu_per_wall": round(sum(x["cpu_s"] for x in ph) / busy_s, 4),
            "tokenize_share_of_stage": round(sum(x["tokenize_s"] for x in ph) / busy_s, 4),
            "decode_share_of_stage": round(sum(x["decode_s"] for x in ph) / busy_s, 4),
        }
        if phase == "pipeline":
            total: dict[str, float] = {}
            for x in ph:
                for step, ms in x["stage_ms_total"].items():
                    total[step] = total.get(step, 0.0) + ms
            entry["ms_per_note_by_step"] = {k: round(v / max(1, notes), 3) for k, v in total.items()}
        report[phase] = entry
    return report


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "date": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        import torch

        env["torch"] = torch.__version__
        env["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        env["torch"] = None
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", default="1,2,4", help="comma-separated process counts sharing the GPU")
    ap.add_argument("--n", type=int, default=12000, help="notes (split among the processes)")
    ap.add_argument("--chars", type=int, default=1000)
    ap.add_argument("--ner-batch", type=int, default=256, help="notes per NER step call")
    ap.add_argument("--ner-windows", type=int, default=256, help="windows per forward call (ner batch_size)")
    ap.add_argument("--pipeline-batch", type=int, default=256, help="notes per pipeline call")
    ap.add_argument("--seconds", type=float, default=15.0, help="longest measurement per phase")
    ap.add_argument("--notes", type=Path, help="JSONL(.xz) of notes to use instead of generating them")
    ap.add_argument("--profile", default="auto", help="detector profile (auto: gpu-fp16 on a GPU)")
    ap.add_argument("--phases", default="ner,pipeline", help="which phases (ner, pipeline; run in that order)")
    ap.add_argument("--no-ner-cycle", dest="ner_cycle", action="store_false",
                    help="the ner phase stops after its notes (default: it runs them again until --seconds)")
    ap.add_argument("--timeout", type=float, default=240.0, help="longest wait at a barrier (load included)")
    ap.add_argument("--dry-run", action="store_true", help="CPU, few notes: checks the script, not the GPU")
    ap.add_argument("-o", "--output", type=Path)
    a = ap.parse_args()
    asked = [p for p in a.phases.split(",") if p]
    phases = [p for p in ("ner", "pipeline") if p in asked]
    if not phases or len(phases) != len(asked):
        ap.error(f"--phases: one or both of ner, pipeline (got {a.phases!r})")
    if a.dry_run:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the children see no GPU
        a.n, a.ner_batch, a.pipeline_batch, a.ner_windows, a.seconds = min(a.n, 24), 4, 4, 8, min(a.seconds, 30)
    args = {"n": a.n, "chars": a.chars, "ner_batch": a.ner_batch, "ner_windows": a.ner_windows,
            "pipeline_batch": a.pipeline_batch, "seconds": a.seconds, "profile": a.profile,
            "phases": phases, "ner_cycle": a.ner_cycle and not a.dry_run,
            "notes": str(a.notes) if a.notes else None}
    result: dict[str, Any] = {"script": "scripts/gpu_run.py", "dry_run": a.dry_run, "settings": args,
                              "environment": environment(), "runs": []}
    for procs in (int(x) for x in a.procs.split(",")):
        run = run_procs(procs, args, a.timeout)
        result["runs"].append(run)
        print(json.dumps({k: run.get(k) for k in ("procs", "error", "ner", "pipeline")}), file=sys.stderr, flush=True)
        if a.output:  # after every run: a later run that overruns the call's time leaves the earlier ones
            a.output.parent.mkdir(parents=True, exist_ok=True)
            a.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
