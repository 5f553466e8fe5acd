#!/usr/bin/env bash
# Mixed precision on CPU, ours against PyTorch's, in one run (issue 30,
# item 7): for the seed CNN (global batch 256) and the seed's VGG16 transfer
# step (examples/vgg16_oct.json, 224x224, batch 32), the training step of
#   ours float32            graphc --precision float32
#   ours mixed_bfloat16     graphc --precision mixed_bfloat16, oneDNN bf16
#                           path as GRAPH_CPU_BF16=auto picks it (the
#                           start-up line says which)
#   ours mixed_bfloat16,    the same plan with GRAPH_CPU_BF16=onednn, when
#     oneDNN forced         auto did not pick oneDNN (on a CPU without
#                           AVX512-BF16 or AMX oneDNN emulates bf16)
#   PyTorch float32         eager, channels_last
#   PyTorch autocast bf16   eager, channels_last, the forward pass under
#                           torch.autocast("cpu", dtype=torch.bfloat16)
# all on 1 replica / set_num_threads(2), synthetic data, Adam 0.001, glibc's
# malloc kept from returning its buffers (../shared/BUILD-NOTES.md). Two
# rounds; within a round every row runs once, one after the other, so a
# change of load hits all of them alike.
#
# The goals of issue 30: ours bf16 >= 2x PyTorch bf16 on the seed CNN and
# >= 1.5x on VGG16; on a CPU with AMX, ours bf16 >= 2x ours float32 on
# VGG16. The arena of each plan is printed: the bf16 plan's is smaller by
# the activations' share. lscpu's model and flags come first: whether the
# CPU has avx512_bf16 or amx_bf16 decides what the bf16 rows measure.
# Last, the seed CNN's compute floor in both precisions (bench/cpu-kernels
# --floor; the bf16 plan's is oneDNN's bf16 primitives) and our share of it.
#
#   bench/cpu-bf16-vs-pytorch.sh [cnn-steps] [vgg-steps] [build-dir]
#
# The defaults (30 seed-CNN steps, 2 VGG16 steps after a warm-up each) take
# about 10 minutes on 2 cores without bf16 instructions.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cnn_steps="${1:-30}"
vgg_steps="${2:-2}"
build="${3:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$root/bench/pytorch-peer.sh"

echo "machine: $(nproc) cores"
lscpu | grep -E '^(Model name|Flags):' | sed 's/  */ /g'
echo "bf16 instructions: $(grep -o -w -E 'avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"

declare -A batch=([cnn]=256 [vgg]=32) steps=([cnn]=$cnn_steps [vgg]=$vgg_steps)
declare -A json=([cnn]=fashion_mnist_cnn.json [vgg]=vgg16_oct.json)
for model in cnn vgg; do
  "$build/bin/graph-import" "$root/examples/${json[$model]}" \
    --batch-size "${batch[$model]}" -o "$work/$model.mlir"
  for precision in float32 mixed_bfloat16; do
    plan="$work/$model.$precision.plan"
    "$build/bin/graphc" "$work/$model.mlir" --replicas 1 --precision "$precision" -o "$plan"
    echo "$model $precision arena: $("$build/bin/graphc" --inspect "$plan" |
      awk '/^program train_x1/ { p = 1 } p && /arenas:/ { sub(/^ *arenas: /, ""); print; exit }')"
  done
done

tuned=(env MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 OMP_NUM_THREADS=2)

ours() { # model precision bf16-path -> images/s; the precision line to stderr
  local warmup=1
  [[ $1 == cnn ]] && warmup=5
  "${tuned[@]}" GRAPH_CPU_BF16="$3" "$build/bin/graphrun" "$work/$1.$2.plan" \
    --backend cpu --cpus 1 --data synthetic --steps "$((${steps[$1]} + warmup))" \
    --warmup "$warmup" --log-every 0 --no-progress >"$work/out" 2>&1 || {
    cat "$work/out" >&2
    return 1
  }
  grep -m1 -o 'precision [^)]*)' "$work/out" >&2 || true
  awk '/^images\/sec:/ { print $2 }' "$work/out"
}
peer() { # model [--autocast bf16] -> images/s
  local model=$1
  shift
  if [[ $model == cnn ]]; then
    "${tuned[@]}" /usr/bin/python3 "$root/bench/pytorch_fashion_cnn.py" \
      --steps "${steps[cnn]}" --warmup 5 --channels-last "$@"
  else
    "${tuned[@]}" /usr/bin/python3 "$root/bench/pytorch_vgg16_transfer.py" \
      --steps "${steps[vgg]}" --warmup 1 "$@" | awk '{ print $2 }'
  fi
}

# Does auto pick oneDNN's bf16 primitives here? If not, the forced row shows
# what they cost on this CPU.
forced=0
GRAPH_CPU_BF16=auto "$build/bin/graphrun" "$work/cnn.mixed_bfloat16.plan" --backend cpu \
  --data synthetic --steps 1 --log-every 0 --no-progress 2>&1 |
  grep -q "oneDNN's bf16 primitives" || forced=1

labels=("ours float32" "ours mixed_bfloat16" "ours mixed_bfloat16, oneDNN forced"
  "PyTorch float32, channels_last" "PyTorch autocast bf16, channels_last")
declare -A rate
for round in 1 2; do
  for model in cnn vgg; do
    echo "round $round, $model: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    rate[$round,$model,0]=$(ours "$model" float32 auto)
    rate[$round,$model,1]=$(ours "$model" mixed_bfloat16 auto)
    rate[$round,$model,2]=-
    if ((forced)); then rate[$round,$model,2]=$(ours "$model" mixed_bfloat16 onednn); fi
    rate[$round,$model,3]=$(peer "$model")
    rate[$round,$model,4]=$(peer "$model" --autocast bf16)
  done
done
echo "after: load average $(cut -d' ' -f1-3 /proc/loadavg)"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.2f", a / b }'; }
for model in cnn vgg; do
  echo
  title="seed CNN, batch 256, ${steps[cnn]} steps"
  [[ $model == vgg ]] && title="VGG16 transfer, batch 32, ${steps[vgg]} steps"
  printf '%-40s %9s %8s %8s %9s %8s %8s\n' "$title" "round 1" "/ours32" "/torch16" \
    "round 2" "/ours32" "/torch16"
  for i in "${!labels[@]}"; do
    printf '%-40s' "${labels[$i]}"
    for round in 1 2; do
      r=${rate[$round,$model,$i]}
      printf ' %9s %8s %8s' "$r" "$(ratio "$r" "${rate[$round,$model,0]}")" \
        "$(ratio "$r" "${rate[$round,$model,4]}")"
    done
    echo
  done
done
echo "(images/s; /ours32: against ours float32, /torch16: against PyTorch autocast bf16, same round)"

# The seed CNN's compute floor in each precision (bench/cpu-kernels --floor:
# the step's conv/dense primitives in oneDNN's best layout, bf16 ones for
# the bf16 plan whether or not auto takes that path here) and our share of
# it, from round 2's rates.
echo
for precision in float32 mixed_bfloat16; do
  i=0
  [[ $precision == mixed_bfloat16 ]] && i=1
  floor_ms=$("${tuned[@]}" "$build/bin/cpu-kernels" "$work/cnn.$precision.plan" --floor --reps 10 |
    awk '/^floor / { print $2 }')
  awk -v f="$floor_ms" -v r="${rate[2,cnn,$i]}" -v p="$precision" 'BEGIN {
    ms = 256 / r * 1000
    printf "seed CNN %-15s floor %.2f ms, our step %.2f ms: %.0f%% of the floor\n", p, f, ms, 100 * f / ms }'
done
