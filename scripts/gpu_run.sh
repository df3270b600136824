#!/usr/bin/env bash
# The prepared GPU run (one device call; README, Speed): unpack what scripts/gpu_pack.py put into .gpu/ (the
# packages the device image lacks, the derived cache), then scripts/gpu_run.py with the arguments given;
# the result JSON and the log go to $OUT (the device call brings them back).
#   run tool: command "bash scripts/gpu_run.sh", carry [".gpu"], timeout_s 300
set -euo pipefail
OUT="${OUT:-$(pwd)/out}"
mkdir -p "$OUT" /tmp/deid/site /tmp/deid/cache
tar -xJf .gpu/site.tar.xz -C /tmp/deid/site
tar -xJf .gpu/cache.tar.xz -C /tmp/deid/cache
export PYTHONPATH="/tmp/deid/site:$(pwd)" DEID_CACHE_DIR=/tmp/deid/cache PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1 || true
"$PY" scripts/gpu_run.py --notes .gpu/notes.jsonl.xz --procs "${PROCS:-1,2,4}" --seconds "${SECONDS_PER_PHASE:-15}" -o "$OUT/gpu_run.json" "$@" \
  2>&1 | tee "$OUT/gpu_run.log"
