#!/usr/bin/env bash
# Tasks as data on a GPU, one call:   bench/gpu_tasks_check.sh OUTDIR
# 1. the five examples in test mode (every public and hidden test shape, the adversarial families)
#    with compute-sanitizer off: each must be verified;
# 2. the KernelBench-style corpus: the triage on the GPU (tests/data/kernelbench);
# 3. the ruler on one imported problem with parameters and one without (reference vs eager and
#    compile vs compile, 1.00 +- 0.02 asked for by docs/tasks.md).
# PARTS (default "examples triage calibrate") picks which run, in that order.
# Writes JSON and logs under OUTDIR; docs/bench/gpu-site.md quotes them. Runs as root.
set -uo pipefail
OUT="${1:?usage: bench/gpu_tasks_check.sh OUTDIR}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
PARTS=" ${PARTS:-examples triage calibrate} "
stamp() { date +%s; }
if [[ "$PARTS" == *" examples "* ]]; then
t0=$(stamp)
for t in softmax layernorm gelu_bias_residual matmul_bias_relu transformer_block; do
  EVALUATOR_SANITIZE=0 timeout 150 $PY -m evaluator run "examples/$t.py" --task "$t" --device cuda --mode test \
    --json "$OUT/test_$t.json" 2>&1 | head -4
done
echo "examples $(( $(stamp) - t0 )) s" | tee -a "$OUT/seconds.txt"
fi
if [[ "$PARTS" == *" triage "* ]]; then
t0=$(stamp)
timeout 200 $PY -m evaluator triage tests/data/kernelbench --device cuda --json "$OUT/triage.json" 2>&1 | tail -32
echo "triage $(( $(stamp) - t0 )) s" | tee -a "$OUT/seconds.txt"
fi
if [[ "$PARTS" == *" calibrate "* ]]; then
t0=$(stamp)
KB=$(mktemp -d) && chmod 755 "$KB" && cp -r tests/data/kernelbench/level1 tests/data/kernelbench/level2 "$KB"/
EVALUATOR_TASKS_PATH="$KB" timeout ${CAL_TIMEOUT:-300} $PY -m evaluator calibrate --device cuda \
  --task "${CAL_PARAMS:-11_linear_relu}" --task "${CAL_PLAIN:-6_masked_scale}" --json "$OUT/calibrate_kb.json" 2>&1 | tail -12
echo "calibrate $(( $(stamp) - t0 )) s" | tee -a "$OUT/seconds.txt"
fi
