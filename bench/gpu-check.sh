#!/usr/bin/env bash
# The one command for a GPU machine. In order, each result written to the
# summary as soon as it is known (device time is short; a killed run still
# leaves what it measured):
#   1. the CUDA kernel tests (every conformance case, cuda vs reference) and
#      the GPU runtime tests; a skipped GPU test is reported as a failure,
#      except NCCL across GPUs on a one-GPU machine and the no-GPU path's;
#   2. one training step of the seed CNN against PyTorch (float64 on the
#      CPU; fp32 within 1e-4, tf32 within 1e-2 or twice PyTorch's own TF32
#      step's error), and 1, 2 and 4 logical GPUs agreeing within 1e-4
#      after 10 fp32 steps;
#   3. images/s of the seed CNN (Adam 0.001) at global batch 256, then 1024
#      (torch.compile last of all, at 256: its autotuning takes minutes):
#      graphrun --gpus 1 (host input), --cache-on-device, the same with
#      --steps-in-flight 1 (each step waits for the one before: what
#      launching ahead wins), the same on a plan whose conv kernels stay
#      HWIO (graphc --keras-filter-layout: what the per-step filter
#      transposes cost), --no-cuda-graph, --precision fp32,
#      --gpus 2 and 4 (logical GPUs when there is one), PyTorch eager and
#      torch.compile(mode="max-autotune") on the same GPU (cudnn.benchmark,
#      fused Adam, TF32 as ours), the peers' data resident on the GPU, so our
#      ratios use --cache-on-device: like for like;
#      and the device's idle time between two steps (bench/trace_gaps.py),
#      with two steps in flight and with one;
#   4. wall time to 0.90 test accuracy (ours and PyTorch eager), and
#      --gpus 2 --epochs 5 --eval on Fashion-MNIST.
# Logs go under $OUT when set (else build-gpu/gpu-check): at most 8 files.
#
#   bench/gpu-check.sh [--steps N] [--quick] [--profile]
#
# Two ways to get the programs:
#   - carried (the lent machines, which have CUDA and PyTorch but none of
#     the runtime's Debian libraries and no network): here, after
#     ./scripts/build.sh, `bench/gpu-deps.sh bundle`; then on the device
#     `bench/gpu-check.sh`, carrying `.gpu-deps`;
#   - built (a GPU machine set up with scripts/setup.sh): without
#     .gpu-deps, the script builds into build-gpu (GRAPH_GPU_BUILD_DIR).
#
# --quick: batch 256 only, no torch.compile, no time to accuracy.
# --profile: also each kernel's time in a batch-256 step (ncu), kernels.txt.
# Exits 2, saying so, where there is no GPU; 1 when a build or check fails.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps=100
quick=""
profile=""
while [[ $# -gt 0 ]]; do
  case "$1" in
  --steps) steps="$2"; shift 2 ;;
  --quick) quick=1; shift ;;
  --profile) profile=1; shift ;;
  *) echo "gpu-check: unknown argument '$1'" >&2; exit 1 ;;
  esac
done

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU or driver here (nvidia-smi -L fails): nothing to check; run it on a GPU machine" >&2
  exit 2
fi
build="${GRAPH_GPU_BUILD_DIR:-$root/build-gpu}"
out="${OUT:-$build/gpu-check}"
mkdir -p "$out"
summary="$out/summary.txt"
tests_log="$out/tests.log" runs_log="$out/graphrun.log"
peers_log="$out/pytorch.log" checks_log="$out/checks.log"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
failed=0
fail() { failed=1; note "FAILED: $*"; }
gpus=$(nvidia-smi -L | grep -c '^GPU')
note "$(nvidia-smi -L | head -4)"
note "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
python=python3
[[ -x /opt/torch/.venv/bin/python3 ]] && python=/opt/torch/.venv/bin/python3

# --- the programs ---------------------------------------------------------
if [[ -f "$root/.gpu-deps/prebuilt.tar.xz" ]]; then
  exports=$("$root/bench/gpu-deps.sh" env) || { fail "unpacking .gpu-deps"; exit 1; }
  eval "$exports"
  bin="$GRAPH_PREBUILT"
  tests_dir="$GRAPH_PREBUILT"
  plans="$root/.gpu-deps/plans"
  note "programs: carried (.gpu-deps); CUDA libraries from ${LD_LIBRARY_PATH#*prebuilt/lib:}"
else
  echo "$(date +%T) == build ($build)"
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH=/usr/lib/llvm-22 -DCMAKE_CUDA_ARCHITECTURES=90 \
      ${GRAPH_CMAKE_ARGS:-} >"$tests_log" 2>&1 || { fail "configure ($tests_log)"; exit 1; }
  fi
  ninja -C "$build" graphrun graph-import graphc gpu-runtime-tests \
    cuda-kernel-tests >>"$tests_log" 2>&1 || { fail "build ($tests_log)"; exit 1; }
  ldd "$build/bin/graphrun" | grep libcudart >/dev/null ||
    { fail "$build has no CUDA backend (no CUDA compiler found)"; exit 1; }
  bin="$build/bin"
  tests_dir="$build/test/runtime"
  plans="$build/gpu-plans"
  GRAPH_BUILD_DIR="$build" "$root/bench/gpu-deps.sh" plans "$plans" >>"$tests_log" 2>&1 ||
    { fail "compiling the seed plans ($tests_log)"; exit 1; }
  export GRAPH_TEST_SEED_PLAN="$plans/seed_b64.plan"
fi
data_dir="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
graphrun() { timeout 120 "$bin/graphrun" "$@"; }

# --- 1. tests -------------------------------------------------------------
for t in cuda-kernel-tests gpu-runtime-tests; do
  echo "$(date +%T) == $t"
  program=$(find "$tests_dir" -name "$t" -type f -perm -u+x | head -1)
  log="$out/$t.part"
  timeout 150 "$program" --gtest_brief=0 >"$log" 2>&1
  rc=$?
  cat "$log" >>"$tests_log"
  passed=$(grep -cE '^\[       OK \]' "$log")
  skips=$(grep -E '^\[  SKIPPED \] [A-Za-z]' "$log" | sed 's/^\[  SKIPPED \] //; s/ (.*//' | sort -u | tr '\n' ' ')
  nskips=$(wc -w <<<"$skips")
  note "$t: exit $rc, $passed passed, $nskips skipped: $(cut -d' ' -f1-4 <<<"${skips:-none}")$([[ $nskips -gt 4 ]] && echo ' ...')"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sed 's/ (.*//; s/, where .*//' | sort -u | head -20 | tee -a "$summary"
  [[ $rc -ne 0 ]] && fail "$t (exit $rc)"
  # A GPU test may skip only for want of a second physical GPU; the test
  # of the no-GPU path has nothing to test here.
  for s in $skips; do
    [[ "$s" == *WithoutGpu* ]] && continue
    if ! { [[ $gpus -lt 2 ]] && [[ "$s" == *NcclAllReduceAcrossGpus* ]]; }; then
      fail "$s skipped on a machine with a GPU"
    fi
  done
  rm -f "$log"
done

# --- 2. one step vs PyTorch; 1, 2 and 4 logical GPUs ---------------------
echo "$(date +%T) == one step vs PyTorch"
work=$(mktemp -d)
compare="$root/test/compare"
PYTHONPATH="$compare" $python "$compare/torch_one_step.py" init "$work/init.safetensors" >>"$checks_log" 2>&1
for precision in fp32 tf32; do
  tol=1e-4 loss_tol=1e-6 peer=()
  # TF32: 1e-2, or twice PyTorch's own TF32 step's error where that is more
  # (a bias whose gradient is a sum of 173,056 cancelling terms, which
  # Adam's first step divides by its own magnitude).
  [[ $precision == tf32 ]] && tol=1e-2 loss_tol=1e-3 peer=(--peer-device cuda --peer-precision tf32)
  graphrun "$plans/seed_b256.plan" --gpus 1 --precision "$precision" \
    --init-weights "$work/init.safetensors" --no-shuffle --steps 1 --log-every 1 \
    --data fashion_mnist --data-dir "$data_dir" --metrics "$work/$precision.jsonl" \
    --save-weights "$work/$precision.safetensors" >>"$runs_log" 2>&1 &&
    PYTHONPATH="$compare" $python "$compare/torch_one_step.py" compare \
      "$work/init.safetensors" "$work/$precision.safetensors" "$work/$precision.jsonl" \
      --data-dir "$data_dir" --weight-tolerance "$tol" --loss-tolerance "$loss_tol" \
      "${peer[@]}" >"$work/compare.txt" 2>&1
  rc=$?
  cat "$work/compare.txt" >>"$checks_log"
  worst=$(awk '/max\|torch/ { for (i = 1; i < NF; ++i) if ($i == "=") v = $(i + 1); if (v + 0 > m + 0) { m = v; w = $1 } } END { print m, w }' "$work/compare.txt")
  note "one step vs PyTorch, $precision (tolerance $tol): $([[ $rc -eq 0 ]] && echo passed || echo FAILED), worst relative difference ${worst:-?}"
  [[ $rc -ne 0 ]] && fail "one step vs PyTorch ($precision)"
done
echo "$(date +%T) == 1, 2 and 4 logical GPUs"
# In fp32: TF32's rounding differs with the per-replica batch's algorithms.
for n in 1 2 4; do
  graphrun "$plans/seed_b256.plan" --gpus "$n" --precision fp32 --init-weights "$work/init.safetensors" \
    --no-shuffle --steps 10 --log-every 5 --data fashion_mnist --data-dir "$data_dir" \
    --save-weights "$work/gpus$n.safetensors" >>"$runs_log" 2>&1 ||
    fail "graphrun --gpus $n --steps 10"
done
for n in 2 4; do
  $python "$compare/compare_weights.py" "$work/gpus$n.safetensors" \
    "$work/gpus1.safetensors" --rtol 1e-4 >"$work/weights.txt" 2>&1
  rc=$?
  cat "$work/weights.txt" >>"$checks_log"
  worst=$(awk 'NF >= 2 && $2 + 0 > m + 0 { m = $2; w = $1 } END { print m, w }' "$work/weights.txt")
  if [[ $rc -eq 0 ]]; then
    note "--gpus $n vs --gpus 1, fp32, after 10 steps: within 1e-4 (worst ${worst:-?})"
  else
    fail "--gpus $n vs --gpus 1, fp32, after 10 steps: worst ${worst:-?} (checks.log)"
  fi
done

# --- 3. throughput ----------------------------------------------------------
ours() { # plan gpus extra... -> images/s
  local plan="$1" n="$2"; shift 2
  echo "-- graphrun $plan --gpus $n $*" >>"$runs_log"
  graphrun "$plan" --gpus "$n" --data synthetic --steps "$((steps + 10))" \
    --warmup 10 --log-every 100000 "$@" 2>&1 | tee -a "$runs_log" |
    awk '/^images\/sec:/ { print $2 }' | tail -1
}
peer() { # batch extra... -> images/s
  local batch="$1"; shift
  echo "-- pytorch batch $batch $*" >>"$peers_log"
  timeout 300 $python "$root/bench/pytorch_fashion_cnn.py" --device cuda --batch "$batch" \
    --steps "$steps" --warmup 10 "$@" 2>>"$peers_log" | tail -1
}
declare -A ips
rows=("ours1:graphrun --gpus 1" "ours1c:graphrun --gpus 1 --cache-on-device"
  "ours1c1:graphrun --gpus 1 --cache-on-device --steps-in-flight 1"
  "ours1ch:graphrun --gpus 1 --cache-on-device, HWIO kernels"
  "ours1ng:graphrun --gpus 1 --no-cuda-graph" "ours1f:graphrun --gpus 1 --precision fp32"
  "ours2:graphrun --gpus 2" "ours4:graphrun --gpus 4"
  "eager:PyTorch eager" "compile:torch.compile max-autotune")
batches=(256 1024)
[[ -n "$quick" ]] && batches=(256)
for batch in "${batches[@]}"; do
  plan="$plans/seed_b$batch.plan"
  echo "$(date +%T) == batch $batch"
  ips[ours1_$batch]=$(ours "$plan" 1)
  ips[ours1c_$batch]=$(ours "$plan" 1 --cache-on-device)
  ips[ours1c1_$batch]=$(ours "$plan" 1 --cache-on-device --steps-in-flight 1)
  [[ -f "$plans/seed_b${batch}_hwio.plan" ]] &&
    ips[ours1ch_$batch]=$(ours "$plans/seed_b${batch}_hwio.plan" 1 --cache-on-device)
  ips[ours1ng_$batch]=$(ours "$plan" 1 --no-cuda-graph)
  ips[ours1f_$batch]=$(ours "$plan" 1 --precision fp32)
  ips[ours2_$batch]=$(ours "$plan" 2)
  ips[ours4_$batch]=$(ours "$plan" 4)
  ips[eager_$batch]=$(peer "$batch")
  for key in ours1 ours1c ours1c1 ours1ch ours1ng ours1f ours2 ours4 eager; do
    note "batch $batch, $key: ${ips[${key}_$batch]:-n/a} images/s"
  done
done

# The device's idle time between two steps, from graphrun's trace: with
# one step in flight, the host's wait, read, hooks and next launch; with
# two (the default), what launching ahead leaves of it.
echo "$(date +%T) == gap between steps"
for inflight in 2 1; do
  if graphrun "$plans/seed_b256.plan" --gpus 1 --cache-on-device --data synthetic \
    --steps 60 --log-every 100000 --steps-in-flight "$inflight" \
    --trace "$work/trace.json" >>"$runs_log" 2>&1; then
    note "batch 256, --cache-on-device, --steps-in-flight $inflight: $($python "$root/bench/trace_gaps.py" "$work/trace.json" --skip 10 2>&1)"
  else
    note "graphrun --trace --steps-in-flight $inflight failed (graphrun.log)"
  fi
done

# --- 4. accuracy ------------------------------------------------------------
tta_ours="n/a" tta_eager="n/a" acc2="n/a"
if [[ -z "$quick" ]]; then
  echo "$(date +%T) == time to 0.90 test accuracy (batch 256)"
  # Wall time from launch (start-up included, for both) to the first
  # evaluation at or above 0.90, evaluating every 100 steps.
  start=$(date +%s.%N)
  tta_ours=$(graphrun "$plans/seed_b256.plan" --gpus 1 --data fashion_mnist \
    --data-dir "$data_dir" --cache-on-device --epochs 15 --eval-every 100 \
    --log-every 100000 2>&1 | tee -a "$runs_log" | while IFS= read -r line; do
      if [[ "$line" =~ ^eval.*accuracy\ =\ ([0-9.]+) ]] &&
        awk -v a="${BASH_REMATCH[1]}" 'BEGIN { exit !(a >= 0.90) }'; then
        awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'
        break
      fi
    done)
  note "time to 0.90, graphrun: ${tta_ours:-not reached} s"
  tta_eager=$(timeout 300 $python "$root/bench/pytorch_fashion_cnn.py" --device cuda \
    --data-dir "$data_dir" --target-accuracy 0.90 2>>"$peers_log" | tail -1)
  note "time to 0.90, PyTorch eager: ${tta_eager:-n/a} s"
  echo "$(date +%T) == --gpus 2 --epochs 5 --eval"
  acc2=$(graphrun "$plans/seed_b256.plan" --gpus 2 --data fashion_mnist \
    --data-dir "$data_dir" --epochs 5 --eval --log-every 100000 2>&1 |
    tee -a "$runs_log" | sed -n 's/^eval.*accuracy = \([0-9.]*\).*/\1/p' | tail -1)
  note "--gpus 2 --epochs 5 --eval: test accuracy ${acc2:-n/a}"
fi
# Each kernel's device time in a step at batch 256 (Nsight Compute, one
# metric): the same run with 4 and with 12 steps, so that the difference is
# 8 steps' kernels whatever start-up launched (bench/ncu_step_table.py).
if [[ -n "$profile" ]]; then
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  if [[ -n "$ncu" ]]; then
    echo "$(date +%T) == kernel profile"
    for n in 4 12; do
      timeout 120 "$ncu" --metrics gpu__time_duration.sum --csv --print-summary per-kernel \
        "$bin/graphrun" "$plans/seed_b256.plan" --gpus 1 --data synthetic \
        --steps "$n" --warmup 1 --log-every 100000 --no-cuda-graph >"$work/ncu$n.csv" 2>&1 ||
        note "ncu failed ($n steps)"
    done
    $python "$root/bench/ncu_step_table.py" "$work/ncu4.csv" "$work/ncu12.csv" 8 \
      >"$out/kernels.txt" 2>&1 && note "kernel profile: $(tail -1 "$out/kernels.txt" | awk '{ print $1 }') us a step (kernels.txt)"
  else
    note "no ncu here: no kernel profile"
  fi
fi

# Last, as its autotuning takes minutes: torch.compile at batch 256.
if [[ -z "$quick" ]]; then
  echo "$(date +%T) == torch.compile max-autotune, batch 256"
  ips[compile_256]=$(peer 256 --compile --compile-mode max-autotune)
  note "batch 256, compile: ${ips[compile_256]:-n/a} images/s"
fi

rm -rf "$work"

# --- table ------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "n/a" }'; }
{
  echo
  echo "seed CNN training, images/s ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); --gpus 2/4 are logical when there is one GPU)"
  printf '%-58s %12s %12s\n' "" "batch 256" "batch 1024"
  for row in "${rows[@]}"; do
    key="${row%%:*}"
    printf '%-58s %12s %12s\n' "${row#*:}" "${ips[${key}_256]:-n/a}" "${ips[${key}_1024]:-n/a}"
  done
  printf '%-58s %12s %12s\n' "ratio cached/eager (goal 3)" \
    "$(ratio "${ips[ours1c_256]:-0}" "${ips[eager_256]:-0}")" \
    "$(ratio "${ips[ours1c_1024]:-0}" "${ips[eager_1024]:-0}")"
  printf '%-58s %12s\n' "ratio cached/torch.compile (1.5)" \
    "$(ratio "${ips[ours1c_256]:-0}" "${ips[compile_256]:-0}")"
  echo "time to 0.90 test accuracy (s): graphrun ${tta_ours:-not reached} | PyTorch eager ${tta_eager:-n/a}"
  echo "--gpus 2 --epochs 5 --eval: ${acc2:-n/a}"
  [[ $failed -ne 0 ]] && echo "SOME CHECKS FAILED: see the FAILED lines above and $out"
} | tee -a "$summary"
exit $failed
