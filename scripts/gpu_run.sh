#!/usr/bin/env bash
# The prepared GPU run (one device call; README, Speed): unpack what scripts/gpu_pack.py put into .gpu/pack/ (the
# packages the device image lacks, the derived cache, the notes), then
#   1. scripts/gpu_run.py with the arguments given (NER stage and whole pipeline, N processes sharing the GPU);
#   2. with NER_SETTINGS="512:512 512:1024" (say): the NER stage alone at those notes per call : windows per forward;
#   3. scripts/gpu_spans.py: the shipped NER's spans on the eval sets in float16 and float32 (device profiles;
#      SKIP_SPANS=1: not again).
# MPS=1 runs step 2 a second time under NVIDIA's multi-process service (kernels of several processes at once instead
# of time slices of the GPU; gpu_ner_mps_*.json): the daemon is started and stopped here, in user space, and the
# GPU's own settings are left as they are. Not yet run on a GPU (no device in the session that wrote it).
# The result JSON, the spans file and the logs go to $OUT (the device call brings them back).
#   run tool: command "bash scripts/gpu_run.sh", carry [".gpu/pack"], timeout_s 420 (everything in one call)
# When the tracked files and the pack together pass the 64 MiB a call carries, the packages travel in calls of their
# own (`python scripts/gpu_pack.py` cuts them into parts site-K-of-N.tar.xz that each fit beside the tracked files,
# and prints the calls) and the run follows at once, while the machine is warm (its idle window: 30 s on an H200),
# which keeps /tmp:
#   1. command "STAGE=site bash scripts/gpu_run.sh", carry [".gpu/pack/site-1-of-N.tar.xz"], timeout_s 60; the same
#      for each further part
#   2. command "bash scripts/gpu_run.sh", carry [".gpu/pack/cache.tar.xz", ".gpu/pack/notes.jsonl.xz",
#      ".gpu/pack/eval_notes.jsonl.xz"], timeout_s 420
set -euo pipefail
OUT="${OUT:-$(pwd)/out}"
PACK=.gpu/pack
SITE="${DEID_SITE:-/tmp/deid/site}"  # kept by a warm machine between calls
mkdir -p "$OUT" "$SITE/.deidstream-site" /tmp/deid/cache
for part in "$PACK"/site-*-of-*.tar.xz; do
  [ -f "$part" ] || continue
  tar -xJf "$part" -C "$SITE"
  name="$(basename "$part" .tar.xz)"
  touch "$SITE/.deidstream-site/$name"  # which parts are in: the run checks that all N are
done
parts_in() { find "$SITE/.deidstream-site" -name 'site-*-of-*' | wc -l; }
parts_of() { find "$SITE/.deidstream-site" -name 'site-*-of-*' | head -1 | sed 's/.*-of-//'; }
if [ "${STAGE:-}" = site ]; then
  echo "packages unpacked into $SITE: $(parts_in) of $(parts_of) part(s); the next call at once"
  exit 0
fi
if [ "$(parts_in)" -eq 0 ] || [ "$(parts_in)" -ne "$(parts_of)" ]; then
  echo "no packages in $SITE ($(parts_in) of $(parts_of) part(s)): carry .gpu/pack/site-K-of-N.tar.xz, or stage each" \
    "first (STAGE=site)" >&2
  exit 2
fi
tar -xJf "$PACK/cache.tar.xz" -C /tmp/deid/cache
export PYTHONPATH="$SITE:$(pwd)" DEID_CACHE_DIR=/tmp/deid/cache PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1 || true
nproc >> "$OUT/gpu.txt"
status=0
timeout "${RUN_LIMIT_S:-280}" "$PY" scripts/gpu_run.py --notes "$PACK/notes.jsonl.xz" --procs "${PROCS:-1,4,8,16}" \
  --n "${NOTES:-24000}" --seconds "${SECONDS_PER_PHASE:-12}" --pipeline-batch "${PIPELINE_BATCH:-64}" \
  -o "$OUT/gpu_run.json" "$@" > "$OUT/gpu_run.log" 2>&1 || status=$?
tail -c 6000 "$OUT/gpu_run.log"
# the NER stage alone at larger batches (notes per step call / windows per forward), each process count sharing the GPU
ner_runs() {  # $1: the files' prefix
  for setting in $NER_SETTINGS; do  # "NOTES_PER_CALL:WINDOWS_PER_FORWARD ..."
    timeout "${NER_LIMIT_S:-120}" "$PY" scripts/gpu_run.py --notes "$PACK/notes.jsonl.xz" --phases ner \
      --procs "${NER_PROCS:-16}" --n "${NOTES:-24000}" --seconds "${SECONDS_PER_PHASE:-12}" \
      --ner-batch "${setting%%:*}" --ner-windows "${setting##*:}" -o "$OUT/$1_${setting/:/_}.json" \
      > "$OUT/$1_${setting/:/_}.log" 2>&1 || status=$?
    tail -c 1500 "$OUT/$1_${setting/:/_}.log"
  done
}
if [ -n "${NER_SETTINGS:-}" ]; then
  ner_runs gpu_ner
  if [ -n "${MPS:-}" ]; then
    if command -v nvidia-cuda-mps-control > /dev/null 2>&1; then
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/deid/mps CUDA_MPS_LOG_DIRECTORY=/tmp/deid/mps-log
      mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
      if nvidia-cuda-mps-control -d > "$OUT/mps.txt" 2>&1; then
        ner_runs gpu_ner_mps
        echo quit | nvidia-cuda-mps-control >> "$OUT/mps.txt" 2>&1 || true
      else
        echo "the MPS daemon did not start" >> "$OUT/mps.txt"
      fi
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    else
      echo "no nvidia-cuda-mps-control on this machine" > "$OUT/mps.txt"
    fi
  fi
fi
if [ -f "$PACK/eval_notes.jsonl.xz" ] && [ -z "${SKIP_SPANS:-}" ]; then
  timeout "${SPANS_LIMIT_S:-90}" "$PY" scripts/gpu_spans.py --notes "$PACK/eval_notes.jsonl.xz" \
    -o "$OUT/ner_spans_gpu.jsonl.gz" 2>&1 | tee "$OUT/gpu_spans.log" || status=$?
fi
exit "$status"
