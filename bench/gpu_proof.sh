#!/usr/bin/env bash
# The GPU proof (issue 6), one command on a GPU host:   bench/gpu_proof.sh OUTDIR [stage ...]
# Stages (default: all, in this order): smoke examples calibrate baselines exploits sandbox
# sanitizer spread. Each writes JSON/logs under OUTDIR; bench/gpu_report.py turns them into
# docs/gpu-results.md. Runs as root (the judge drops the runner to uid 65534).
set -uo pipefail
OUT="${1:?usage: bench/gpu_proof.sh OUTDIR [stage ...]}"; shift
mkdir -p "$OUT"
STAGES="${*:-smoke examples calibrate baselines exploits sandbox sanitizer spread}"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
TASKS="softmax layernorm gelu_bias_residual matmul_bias_relu transformer_block"

stamp() { date +%s.%N; }
took() { echo "$1 $(echo "$(stamp) - $2" | bc)" >> "$OUT/stage_seconds.txt"; }

for stage in $STAGES; do
  t0=$(stamp)
  echo "=== $stage ==="
  case "$stage" in
    smoke)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv > "$OUT/smoke.txt" 2>&1
      $PY -c 'import torch,triton,sys;print(sys.version.split()[0],torch.__version__,torch.version.cuda,triton.__version__,torch.cuda.get_device_name())' >> "$OUT/smoke.txt" 2>&1
      (command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer) >> "$OUT/smoke.txt" 2>&1
      uname -r >> "$OUT/smoke.txt"; cat "$OUT/smoke.txt" ;;
    examples)
      for t in $TASKS; do
        s=$(stamp)
        EVALUATOR_SANITIZE=0 timeout 300 $PY -m evaluator run "examples/$t.py" --task "$t" --device cuda --json "$OUT/eval_$t.json" 2>&1 | tail -12
        echo "eval_$t wall $(echo "$(stamp) - $s" | bc)" >> "$OUT/stage_seconds.txt"
      done ;;
    calibrate)
      timeout 580 $PY -m evaluator calibrate --device cuda --json "$OUT/calibrate.json" 2>&1 | tail -20 ;;
    baselines)
      timeout 580 $PY bench/gpu_baselines.py --json "$OUT/baselines.json" 2>&1 | tail -12 ;;
    exploits)
      timeout 580 $PY -m pytest tests/exploits -q -x -p no:cacheprovider -m gpu --junitxml "$OUT/exploits_gpu.xml" 2>&1 | tail -25 ;;
    sandbox)
      rm -rf /tmp/dk && mkdir -p /tmp/dk && for f in .debs/*.deb; do dpkg -x "$f" /tmp/dk; done
      export PATH="/tmp/dk/usr/bin:$PATH" LD_LIBRARY_PATH="/tmp/dk/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
      bwrap --version
      for t in softmax transformer_block; do
        timeout 300 $PY -m sandbox run "examples/$t.py" --task "$t" --device cuda --backend bwrap --json "$OUT/sandbox_$t.json" 2>&1 | tail -8
      done ;;
    sanitizer)
      for f in tests/gpu_sanitizer/oob_softmax.py tests/gpu_sanitizer/race_softmax.py examples/softmax.py; do
        n=$(basename "$f" .py)
        timeout 300 $PY -m evaluator run "$f" --task softmax --device cuda --json "$OUT/sanitize_$n.json" 2>&1 | tail -6
      done ;;
    spread)
      for i in 1 2 3 4 5; do
        EVALUATOR_SANITIZE=0 timeout 200 $PY -m evaluator run examples/layernorm.py --task layernorm --device cuda --json "$OUT/spread_$i.json" 2>&1 | grep -i speedup
      done ;;
  esac
  took "$stage" "$t0"
done
cat "$OUT/stage_seconds.txt"
