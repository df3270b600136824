#!/usr/bin/env bash
# One device call: NER fold models of the design patients trained side by side on the GPU, then their out-of-fold
# spans on the design notes (CPU int8, as the shipped runtime decodes them). Prepared here with
#   .venv/bin/python scripts/ner_cv.py prepare && .venv/bin/python scripts/ner_cv.py carry
#   (+ the .whl folder: pydantic, pydantic_core, annotated_types, typing_inspection, rapidfuzz for cp312)
# and run there with carry [".gpucarry", ".whl"]:
#   bash scripts/gpu_ner_cv.sh "e:--steps 1000" "f:--steps 400 --seed 29"
# (surrogate copies: prepare --surrogates 2 before carry, then e.g. "g:--steps 1000 --surrogate-repeats 2";
#  the case channel behind three seeds (trained on the CPU on 2026-11-29 instead): "k:--steps 400 --case-channel"
#  "l:--steps 400 --case-channel --seed 7" "m:--steps 400 --case-channel --seed 29"; their weight soup, made here with
#  `ner_cv.py soup --variants k,l,m --out-variant n --folds 0,1,2,3,4,all`, gave the best design CV so far and lost
#  lockbox recall: scripts/results/QUALITY_HISTORY.md, "The case channel to the lockbox"; SOUP=V:A,B,C makes such a soup here, e.g.
#  SOUP=s:k,l,m,o,p KEEP_FOLDS=s bash scripts/gpu_ner_cv.sh "k:--steps 400 --case-channel" ... "p:... --seed 67")
# The larger base (stage 1: 4 layers x 1536, synthetic notes only; scripts/results/QUALITY_HISTORY.md, "Tried, one
#  fold, not taken further: a larger encoder as the NER's base"): `ner_cv.py base-larger` then `ner_cv.py carry --larger-base` here. It does not fit one call beside the
#  working tree (45 MiB tracked + 14 MiB base + data + wheels > 64 MiB), so it travels first, in a call of its own,
#  into /tmp, which a warm machine keeps while the next call follows within its idle window:
#    1. carry [".gpucarry/base_larger"], command "STAGE=carry bash scripts/gpu_ner_cv.sh", timeout_s 60
#    2. at once: carry [".gpucarry/mix.jsonl.gz", ".gpucarry/physionet.jsonl", ".whl"], command
#       "OOF_FP32=1 bash scripts/gpu_ner_cv.sh 'L:--steps 400 --base .gpu/base_larger'"
#  (uncarry takes what was staged; the stage-2 base is needed only by variants without --base. OOF_FP32=1: the
#  out-of-fold spans unquantized, the GPU profile's numeric path, which a larger model is for; its pack is ~14 MiB.)
# Each argument is VARIANT:TRAIN-ARGS. Back under $OUT: VARIANTfoldall.tar (the model on all design notes, no
# word-piece embeddings: ner_cv.py unpack puts the shipped ones back), with KEEP_FOLDS=V that variant's fold models
# (folds_V.tar.partNN), THRESHOLDS=a,b,c the decode thresholds of the out-of-fold spans, oof_VARIANT.jsonl.gz (then `decider_cv.py oof-filter` here: wordfreq is not there), and log.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}
STAGED="${DEID_STAGED:-/tmp/deid/gpucarry}"  # what an earlier call staged (STAGE=carry), kept by a warm machine
if [ "${STAGE:-}" = carry ]; then
  mkdir -p "$STAGED" && cp -r .gpucarry/. "$STAGED/" || exit 1
  echo "staged into $STAGED: $(ls "$STAGED" | tr '\n' ' '); the next call at once"
  exit 0
fi
if [ -d "$STAGED" ]; then mkdir -p .gpucarry && cp -rn "$STAGED/." .gpucarry/; fi
mkdir -p "$OUT" /tmp/packs /tmp/logs
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
python3 scripts/ner_cv.py uncarry || exit 1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >"$OUT/log.txt"
t0=$(date +%s)
for spec in "$@"; do
  v=${spec%%:*}; a=${spec#*:}
  for f in all 0 1 2 3 4; do
    # shellcheck disable=SC2086
    timeout "${TRAIN_TIMEOUT:-420}" python3 scripts/ner_cv.py train --out /tmp/packs --lr 1e-4 --repeat 3 --folds "$f" \
      --variant "$v" --threads 1 $a >"/tmp/logs/train_${v}_$f.log" 2>&1 &
  done
done
wait
echo "training: $(( $(date +%s) - t0 )) s" >>"$OUT/log.txt"
specs=("$@")
if [ -n "${SOUP:-}" ]; then
  # SOUP=V:A,B,C: the weight soup of the trained variants A, B, C (each fold model and the all-notes model the mean
  # of theirs) as variant V, whose out-of-fold spans and Vfoldall.tar come back like a trained variant's
  if python3 scripts/ner_cv.py soup --packs /tmp/packs --variants "${SOUP#*:}" --out-variant "${SOUP%%:*}" \
      --folds all,0,1,2,3,4 >>"$OUT/log.txt" 2>&1; then
    specs+=("${SOUP%%:*}:@soup ${SOUP#*:}")
  else
    echo "soup ${SOUP}: failed" >>"$OUT/log.txt"
  fi
fi
for spec in "${specs[@]}"; do
  v=${spec%%:*}; a=${spec#*:}
  grep -h '^{' /tmp/logs/train_"${v}"_*.log >>"$OUT/log.txt" 2>/dev/null
  base="stage-2 base"; [[ $a == *--base* ]] && base="the base named"
  recipe="scripts/ner_cv.py train --lr 1e-4 --repeat 3 $a ($base, GPU bf16)"
  fp32=(); inference="CPU int8 inference"
  if [ -n "${OOF_FP32:-}" ]; then fp32=(--fp32); inference="CPU float32 inference"; fi
  [[ $a == @soup* ]] && recipe="scripts/ner_cv.py soup --variants ${a#@soup } (the weight mean of those variants)"
  if ls /tmp/packs/"${v}"fold{0,1,2,3,4}.tar >/dev/null 2>&1; then
    python3 scripts/decider_cv.py oof --packs /tmp/packs --variant "$v" --notes .gpu/physionet.jsonl \
      --out "$OUT/oof_$v.jsonl.gz" --jobs 5 --threads 3 --no-filter --thresholds ${THRESHOLDS:-0.08,0.05,0.03} \
      "${fp32[@]}" --recipe "$recipe, $inference" \
      >>"$OUT/log.txt" 2>&1
  else
    echo "variant $v: a fold model is missing" >>"$OUT/log.txt"; tail -5 /tmp/logs/train_"${v}"_*.log >>"$OUT/log.txt"
  fi
  cp /tmp/packs/"${v}"foldall.tar "$OUT/" 2>/dev/null
done
if [ -n "${KEEP_FOLDS:-}" ]; then
  # one variant's fold models too, as parts of at most 15 MiB (the return limit is 16 MiB a file, 8 files):
  # cat folds_V.tar.part* > folds_V.tar here
  (cd /tmp/packs && tar cf /tmp/folds_"$KEEP_FOLDS".tar "$KEEP_FOLDS"fold{0,1,2,3,4}.tar && \
   split -b 15M -d /tmp/folds_"$KEEP_FOLDS".tar "$OUT/folds_$KEEP_FOLDS.tar.part")
fi
echo "total: $(( $(date +%s) - t0 )) s" >>"$OUT/log.txt"
cat "$OUT/log.txt"
