#!/usr/bin/env bash
# The prepared GPU run (one device call; README, Speed): unpack what scripts/gpu_pack.py put into .gpu/pack/ (the
# packages the device image lacks, the derived cache, the notes), then
#   1. scripts/gpu_run.py with the arguments given (NER stage and whole pipeline, N processes sharing the GPU);
#   2. with NER_SETTINGS="512:512 512:1024" (say): the NER stage alone at those notes per call : windows per forward;
#   3. scripts/gpu_spans.py: the shipped NER's spans on the eval sets in float16 and float32 (device profiles;
#      SKIP_SPANS=1: not again).
# The result JSON, the spans file and the logs go to $OUT (the device call brings them back).
#   run tool: command "bash scripts/gpu_run.sh", carry [".gpu/pack"], timeout_s 420
set -euo pipefail
OUT="${OUT:-$(pwd)/out}"
PACK=.gpu/pack
mkdir -p "$OUT" /tmp/deid/site /tmp/deid/cache
tar -xJf "$PACK/site.tar.xz" -C /tmp/deid/site
tar -xJf "$PACK/cache.tar.xz" -C /tmp/deid/cache
export PYTHONPATH="/tmp/deid/site:$(pwd)" DEID_CACHE_DIR=/tmp/deid/cache PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1 || true
nproc >> "$OUT/gpu.txt"
status=0
timeout "${RUN_LIMIT_S:-280}" "$PY" scripts/gpu_run.py --notes "$PACK/notes.jsonl.xz" --procs "${PROCS:-1,4,8,16}" \
  --n "${NOTES:-24000}" --seconds "${SECONDS_PER_PHASE:-12}" --pipeline-batch "${PIPELINE_BATCH:-64}" \
  -o "$OUT/gpu_run.json" "$@" > "$OUT/gpu_run.log" 2>&1 || status=$?
tail -c 6000 "$OUT/gpu_run.log"
# the NER stage alone at larger batches (notes per step call / windows per forward), each process count sharing the GPU
if [ -n "${NER_SETTINGS:-}" ]; then
  for setting in $NER_SETTINGS; do  # "NOTES_PER_CALL:WINDOWS_PER_FORWARD ..."
    timeout "${NER_LIMIT_S:-120}" "$PY" scripts/gpu_run.py --notes "$PACK/notes.jsonl.xz" --phases ner \
      --procs "${NER_PROCS:-16}" --n "${NOTES:-24000}" --seconds "${SECONDS_PER_PHASE:-12}" \
      --ner-batch "${setting%%:*}" --ner-windows "${setting##*:}" -o "$OUT/gpu_ner_${setting/:/_}.json" \
      > "$OUT/gpu_ner_${setting/:/_}.log" 2>&1 || status=$?
    tail -c 1500 "$OUT/gpu_ner_${setting/:/_}.log"
  done
fi
if [ -f "$PACK/eval_notes.jsonl.xz" ] && [ -z "${SKIP_SPANS:-}" ]; then
  timeout "${SPANS_LIMIT_S:-90}" "$PY" scripts/gpu_spans.py --notes "$PACK/eval_notes.jsonl.xz" \
    -o "$OUT/ner_spans_gpu.jsonl.gz" 2>&1 | tee "$OUT/gpu_spans.log" || status=$?
fi
exit "$status"
