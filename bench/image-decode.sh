#!/usr/bin/env bash
# Image folders through the input pipeline: decode + resize + batch, in
# images per second with 2 threads, ours (runtime/data, TurboJPEG) against
# PIL (2 processes) and tf.data on the same files, in the same run:
#
#   Fashion-MNIST as JPEGs (scripts/fashion-mnist-jpeg.py, train split:
#   60,000 28x28 grey files) at 28x28x1, the seed CNN's input;
#   generated photos (512x496 grayscale, the size of an OCT2017 scan) at
#   224x224x3, a VGG16 input: ours and PIL with and without DCT scaling
#   (PIL's draft), tf.data without (it decodes in full); then, on one
#   thread, each stage's CPU time, for those and for smooth colour photos.
#
# Then the pixels: how far DCT scaling moves them from a full decode, and,
# with TensorFlow, our decode (--fast-idct: TF's default IDCT; and the
# accurate one against dct_method="INTEGER_ACCURATE") and our decode +
# resize (both conventions) against TF's on the same files. Timings are the pipeline's ceiling (the consumer only takes the
# batches), first batch excluded; the machine's load is printed before and
# after, since it moves them.
#
#   bench/image-decode.sh [build-dir]
#
#   PHOTOS      photos to generate and time (default 2000)
#   TF_PYTHON   a python with tensorflow (default: build/keras-venv's, made by
#               bench/keras-venv.sh); without one the TF rows are skipped
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
photos="${PHOTOS:-2000}"
work="$build/image-bench"
py=/usr/bin/python3
peers="$root/bench/image_decode_peers.py"
tf_python="${TF_PYTHON:-$root/build/keras-venv/bin/python}"
# The TF interpreter may belong to another checkout: leave its files alone.
export PYTHONDONTWRITEBYTECODE=1

ninja -C "$build" image-decode >&2
bin="$build/bin/image-decode"
"$py" "$root/scripts/fashion-mnist-jpeg.py" >&2 # idempotent
"$py" "$peers" photos "$work/photos" "$photos" >&2
"$py" "$peers" photos "$work/smooth" 200 --smooth >&2
fashion="$root/build/fashion-mnist-jpeg/train"
have_tf=0
if [[ -x "$tf_python" ]] && "$tf_python" -c 'import tensorflow' 2>/dev/null; then
  have_tf=1
else
  echo "no TensorFlow at $tf_python (bench/keras-venv.sh makes one): tf.data rows skipped" >&2
fi

echo "host: $(nproc) cores, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Read every file once so that no row pays for the disk.
find "$fashion" "$work/photos" -name '*.jpeg' -print0 | xargs -0 cat >/dev/null
echo "photos: $(find "$work/photos" -name '*.jpeg' | wc -l) files, $(du -sh --apparent-size "$work/photos" | cut -f1)"

echo "== Fashion-MNIST JPEGs, 28x28x1"
for run in 1 2; do
  "$bin" --data "$fashion" --shape 28x28x1 --threads 2 | grep '^ours'
  "$py" "$peers" pil "$fashion" 28x28x1 --processes 2
  if [[ $have_tf == 1 ]]; then
    "$tf_python" "$peers" tf "$fashion" 28x28x1 --threads 2
  fi
done
"$bin" --data "$fashion" --shape 28x28x1 --max-images 1 | grep '^listing'

echo "== photos 512x496 to 224x224x3"
for run in 1 2; do
  "$bin" --data "$work/photos" --shape 224x224x3 --threads 2 | grep '^ours'
  "$bin" --data "$work/photos" --shape 224x224x3 --threads 2 --no-dct-scaling | grep '^ours'
  echo -n "(--fast-idct, TF's pixels) "
  "$bin" --data "$work/photos" --shape 224x224x3 --threads 2 --no-dct-scaling --fast-idct | grep '^ours'
  "$py" "$peers" pil "$work/photos" 224x224x3 --processes 2 --dct
  "$py" "$peers" pil "$work/photos" 224x224x3 --processes 2
  if [[ $have_tf == 1 ]]; then
    "$tf_python" "$peers" tf "$work/photos" 224x224x3 --threads 2
  fi
done

echo "== one thread, stage by stage, to 224x224x3: speckle photos, then smooth"
"$bin" --data "$work/photos" --shape 224x224x3 --stage-times 300 | grep '^stages'
"$bin" --data "$work/smooth" --shape 224x224x3 --stage-times 200 | grep '^stages'

echo "== pixels"
"$bin" --data "$work/photos" --shape 224x224x3 --compare-dct 100 | grep '^dct'
"$bin" --data "$work/smooth" --shape 224x224x3 --compare-dct 100 | grep '^dct'
if [[ $have_tf == 1 ]]; then
  parity() { # dump-name shape mode image-decode-flags...
    local name=$1 shape=$2 mode=$3
    shift 3
    "$bin" --shape "$shape" --dump "$work/$name.f32" "$@" >/dev/null
    "$tf_python" "$peers" tf-parity "$work/$name.f32" "$shape" "$mode"
  }
  parity full 496x512x3 decode --data "$work/photos" --max-images 20 \
    --preprocess raw --no-dct-scaling --fast-idct
  parity accurate 496x512x3 decode-accurate --data "$work/photos" \
    --max-images 20 --preprocess raw --no-dct-scaling
  parity fashion 28x28x1 decode --data "$fashion" --max-images 200 \
    --preprocess raw --fast-idct
  parity resized 224x224x3 resize --data "$work/photos" --max-images 20 \
    --no-dct-scaling --fast-idct
  parity legacy 224x224x3 resize-legacy --data "$work/photos" \
    --max-images 20 --no-dct-scaling --fast-idct --resize legacy
  parity upscaled 224x224x3 resize --data "$fashion" --max-images 50 \
    --no-dct-scaling --fast-idct
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
