//===- VectorShapeKernels.cpp - flatten, reshape, concatenate, slice, pad -===//
//
// Copies. flatten and reshape keep the row-major order, so they are one
// copy (none when the plan gives input and output the same buffer);
// concatenate and slice copy contiguous runs whose lengths the factory
// works out once from the axis.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/ReducedPrecision.h"

#include <algorithm>
#include <cstring>

namespace graph::runtime::cpu {

namespace {

using namespace vec;
using Tensors = std::vector<TensorRef>;

/// Bytes per parallel piece of a large copy.
constexpr int64_t kCopyPiece = int64_t{1} << 16;

void parallelCopy(float *to, const float *from, int64_t n) {
  if (to == from || n == 0)
    return;
  int64_t pieceFloats = kCopyPiece / static_cast<int64_t>(sizeof(float));
  int64_t pieces = (n + pieceFloats - 1) / pieceFloats;
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
  for (int64_t p = 0; p < pieces; ++p) {
    int64_t b = p * pieceFloats;
    std::memcpy(to + b, from + b, std::min(pieceFloats, n - b) * sizeof(float));
  }
}

KernelFactory copyFactory(const char *kName) {
  return [kName](const KernelContext &, const KernelConfig &,
                 const Tensors &ins, const Tensors &outs,
                 KernelFn &out) -> Status {
    if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
      return s;
    if (outs[0].elements() != ins[0].elements())
      return kernelError(
          kName, "changes the element count: " + shapeText(ins[0].shape) +
                     " to " + shapeText(outs[0].shape));
    out = [](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
             const Tensors &outs) {
      useReplicaThreads(ctx);
      parallelCopy(outs[0].f32(), ins[0].f32(), ins[0].elements());
      return Status::ok();
    };
    return Status::ok();
  };
}

/// Copies `outer` runs of `run` floats from `from` (stride `fromStride`) to
/// `to` (stride `toStride`).
void copyRuns(float *to, int64_t toStride, const float *from,
              int64_t fromStride, int64_t outer, int64_t run) {
#pragma omp parallel for schedule(static) if (outer * run >= kParallelElements)
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(to + o * toStride, from + o * fromStride, run * sizeof(float));
}

Status concatenateFactory(const KernelContext &, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "concatenate";
  if (Status s =
          checkOperands(kName, ins, outs, 1, size_t{1} << 20, 1, kCpuOperands);
      !s)
    return s;
  const std::vector<int64_t> &shape = outs[0].shape;
  int64_t outer, size, inner, axis;
  if (!splitAxis(shape, cfg.getInt("axis", -1), outer, size, inner, axis))
    return kernelError(kName, "axis " + std::to_string(cfg.getInt("axis", -1)) +
                                  " is out of range for the output " +
                                  shapeText(shape));
  // Per input: its run per outer index, and where the run lands in the
  // output's.
  std::vector<int64_t> runs, offsets;
  int64_t total = 0;
  for (size_t k = 0; k < ins.size(); ++k) {
    const std::vector<int64_t> &s = ins[k].shape;
    bool fits = s.size() == shape.size();
    for (size_t d = 0; fits && d < s.size(); ++d)
      fits = static_cast<int64_t>(d) == axis || s[d] == shape[d];
    if (!fits)
      return kernelError(kName, "input " + std::to_string(k) + " " +
                                    shapeText(s) + " differs from the output " +
                                    shapeText(shape) + " off axis " +
                                    std::to_string(axis));
    runs.push_back(s[axis] * inner);
    offsets.push_back(total * inner);
    total += s[axis];
  }
  if (total != size)
    return kernelError(kName, "inputs add up to " + std::to_string(total) +
                                  " along axis " + std::to_string(axis) +
                                  ", the output has " + std::to_string(size));
  int64_t outRun = size * inner;
  out = [runs, offsets, outer, outRun](const KernelContext &ctx,
                                       const KernelConfig &, const Tensors &ins,
                                       const Tensors &outs) {
    useReplicaThreads(ctx);
    for (size_t k = 0; k < ins.size(); ++k)
      copyRuns(outs[0].f32() + offsets[k], outRun, ins[k].f32(), runs[k], outer,
               runs[k]);
    return Status::ok();
  };
  return Status::ok();
}

Status sliceFactory(const KernelContext &, const KernelConfig &cfg,
                    const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "slice";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  const std::vector<int64_t> &in = ins[0].shape, &res = outs[0].shape;
  int64_t outer, size, inner, axis;
  if (!splitAxis(in, cfg.getInt("axis", -1), outer, size, inner, axis))
    return kernelError(kName, "axis " + std::to_string(cfg.getInt("axis", -1)) +
                                  " is out of range for " + shapeText(in));
  bool fits = res.size() == in.size();
  for (size_t d = 0; fits && d < in.size(); ++d)
    fits = static_cast<int64_t>(d) == axis || res[d] == in[d];
  if (!fits)
    return kernelError(kName, "output " + shapeText(res) +
                                  " differs from the input " + shapeText(in) +
                                  " off axis " + std::to_string(axis));
  int64_t extent = res[axis], offset = cfg.getInt("offset", 0);
  if (offset < 0 || offset + extent > size) {
    std::string range =
        std::to_string(offset) + ", " + std::to_string(offset + extent);
    return kernelError(kName, "[" + range + ") is out of range for axis " +
                                  std::to_string(axis) + " of " +
                                  shapeText(in));
  }
  out = [outer, size, inner, extent,
         offset](const KernelContext &ctx, const KernelConfig &,
                 const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    copyRuns(outs[0].f32(), extent * inner, ins[0].f32() + offset * inner,
             size * inner, outer, extent * inner);
    return Status::ok();
  };
  return Status::ok();
}

/// Zero-pads (positive amounts) or crops (negative) each axis. Each output
/// row (all axes but the last) is either zeros or a run of the input row
/// between zeros.
Status padFactory(const KernelContext &, const KernelConfig &cfg,
                  const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "pad";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  const std::vector<int64_t> &in = ins[0].shape, &res = outs[0].shape;
  std::vector<int64_t> low = cfg.getInts("low"), high = cfg.getInts("high");
  size_t rank = in.size();
  if (rank == 0 || res.size() != rank || low.size() != rank ||
      high.size() != rank)
    return kernelError(kName, "low, high, input " + shapeText(in) +
                                  " and output " + shapeText(res) +
                                  " need one entry per axis");
  for (size_t d = 0; d < rank; ++d)
    if (in[d] + low[d] + high[d] != res[d])
      return kernelError(
          kName, "output " + shapeText(res) + " is not the padded input " +
                     shapeText(in) + " on axis " + std::to_string(d));
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= res[d];
  // Along the last axis: output [begin, end) comes from input begin - low.
  int64_t width = res[rank - 1], inWidth = in[rank - 1];
  int64_t begin = std::clamp<int64_t>(low[rank - 1], 0, width);
  int64_t end = std::clamp<int64_t>(low[rank - 1] + inWidth, begin, width);
  out = [in, res, low, rows, width, inWidth, begin,
         end](const KernelContext &ctx, const KernelConfig &,
              const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *x = ins[0].f32();
    float *y = outs[0].f32();
    size_t outer = in.size() - 1;
#pragma omp parallel for schedule(static) if (rows * width >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r) {
      float *to = y + r * width;
      // The input row of output row r, or -1 when it is padding.
      int64_t source = 0, rest = r, scale = 1;
      for (size_t d = outer; d-- > 0;) {
        int64_t at = rest % res[d] - low[d];
        rest /= res[d];
        if (at < 0 || at >= in[d]) {
          source = -1;
          break;
        }
        source += at * scale;
        scale *= in[d];
      }
      if (source < 0 || begin == end) {
        std::fill(to, to + width, 0.0f);
        continue;
      }
      std::fill(to, to + begin, 0.0f);
      std::memcpy(to + begin, x + source * inWidth + (begin - low[outer]),
                  static_cast<size_t>(end - begin) * sizeof(float));
      std::fill(to + end, to + width, 0.0f);
    }
    return Status::ok();
  };
  return Status::ok();
}

/// A gather of output shape `res` whose axis d advances the input by
/// `from[d]` elements (a permutation's strides, or 0 on a repeated axis):
/// one output row at a time, its last axis read with stride from.back().
KernelFn stridedGather(std::vector<int64_t> res, std::vector<int64_t> from) {
  int64_t width = res.back();
  int64_t elements = 1;
  for (int64_t d : res)
    elements *= d;
  int64_t rows = elements / std::max<int64_t>(width, 1);
  return
      [res, from, rows, width](const KernelContext &ctx, const KernelConfig &,
                               const Tensors &ins, const Tensors &outs) {
        useReplicaThreads(ctx);
        const float *x = ins[0].f32();
        float *y = outs[0].f32();
        size_t outer = res.size() - 1;
        int64_t step = from[outer];
#pragma omp parallel for schedule(static) if (rows * width >= kParallelElements)
        for (int64_t r = 0; r < rows; ++r) {
          int64_t source = 0, rest = r;
          for (size_t d = outer; d-- > 0;) {
            source += (rest % res[d]) * from[d];
            rest /= res[d];
          }
          float *to = y + r * width;
          for (int64_t w = 0; w < width; ++w)
            to[w] = x[source + w * step];
        }
        return Status::ok();
      };
}

/// Output axis d is input axis permutation[d]: a gather per output row.
Status transposeFactory(const KernelContext &, const KernelConfig &cfg,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "transpose";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  const std::vector<int64_t> &in = ins[0].shape, &res = outs[0].shape;
  std::vector<int64_t> perm = cfg.getInts("permutation");
  size_t rank = in.size();
  if (rank == 0 || res.size() != rank || perm.size() != rank)
    return kernelError(kName, "permutation, input " + shapeText(in) +
                                  " and output " + shapeText(res) +
                                  " need one entry per axis");
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= static_cast<int64_t>(rank) || seen[perm[d]])
      return kernelError(kName, "permutation is not one of 0.." +
                                    std::to_string(rank - 1));
    seen[perm[d]] = true;
    if (res[d] != in[perm[d]])
      return kernelError(kName, "output " + shapeText(res) +
                                    " is not the permuted input " +
                                    shapeText(in));
  }
  std::vector<int64_t> stride(rank, 1), from(rank); // input strides
  for (size_t d = rank; d-- > 1;)
    stride[d - 1] = stride[d] * in[d];
  for (size_t d = 0; d < rank; ++d)
    from[d] = stride[perm[d]]; // input stride of output axis d
  out = stridedGather(res, from);
  return Status::ok();
}

/// Checks that `unit` has `full`'s rank and each dimension 1 or full's, and
/// gives unit's strides along full's axes (0 on the repeated ones).
Status broadcastStrides(const char *kName, const std::vector<int64_t> &unit,
                        const std::vector<int64_t> &full,
                        std::vector<int64_t> &strides) {
  if (unit.empty() || unit.size() != full.size())
    return kernelError(kName, shapeText(unit) + " and " + shapeText(full) +
                                  " need one nonzero rank");
  strides.assign(unit.size(), 0);
  int64_t stride = 1;
  for (size_t d = unit.size(); d-- > 0;) {
    if (unit[d] != full[d] && unit[d] != 1)
      return kernelError(kName, shapeText(unit) + " does not broadcast to " +
                                    shapeText(full));
    strides[d] = unit[d] == 1 ? 0 : stride;
    stride *= unit[d];
  }
  return Status::ok();
}

/// Repeats the input's unit axes: a gather per output row, whose last axis
/// is read with stride 0 or 1.
Status broadcastFactory(const KernelContext &, const KernelConfig &,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "broadcast";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  std::vector<int64_t> from, res = outs[0].shape;
  if (Status s = broadcastStrides(kName, ins[0].shape, res, from); !s)
    return s;
  out = stridedGather(res, from);
  return Status::ok();
}

/// broadcast's adjoint: each output element sums (in double) the input
/// elements along the axes where the output has 1.
Status sumToFactory(const KernelContext &, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "sum_to";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  const std::vector<int64_t> &in = ins[0].shape, &res = outs[0].shape;
  std::vector<int64_t> unused;
  if (Status s = broadcastStrides(kName, res, in, unused); !s)
    return s;
  // Input strides of the kept axes (by output coordinate) and of the summed
  // ones.
  std::vector<int64_t> inStride(in.size(), 1);
  for (size_t d = in.size(); d-- > 1;)
    inStride[d - 1] = inStride[d] * in[d];
  std::vector<int64_t> summedDims, summedStrides;
  int64_t count = 1;
  for (size_t d = 0; d < in.size(); ++d)
    if (res[d] == 1 && in[d] != 1) {
      summedDims.push_back(in[d]);
      summedStrides.push_back(inStride[d]);
      count *= in[d];
    }
  int64_t n = outs[0].elements();
  out = [res, inStride, summedDims, summedStrides, count,
         n](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
            const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *x = ins[0].f32();
    float *y = outs[0].f32();
#pragma omp parallel for schedule(static) if (n * count >= kParallelElements)
    for (int64_t o = 0; o < n; ++o) {
      int64_t base = 0, rest = o;
      for (size_t d = res.size(); d-- > 0;) {
        base += (rest % res[d]) * inStride[d];
        rest /= res[d];
      }
      double sum = 0.0;
      for (int64_t k = 0; k < count; ++k) {
        int64_t at = base, left = k;
        for (size_t a = summedDims.size(); a-- > 0;) {
          at += (left % summedDims[a]) * summedStrides[a];
          left /= summedDims[a];
        }
        sum += x[at];
      }
      y[o] = static_cast<float>(sum);
    }
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerVectorShapeKernels(KernelRegistry &registry) {
  registry.addFactory("broadcast", Backend::cpu, broadcastFactory);
  registry.addFactory("sum_to", Backend::cpu, sumToFactory);
  registry.addFactory("flatten", Backend::cpu, copyFactory("flatten"));
  // Reads and writes bfloat16 and float16 itself; every other cpu kernel
  // computes in float32 on widened copies (ReducedPrecision.h).
  registry.addReducedPrecision("cast", Backend::cpu, castKernel);
  registry.addFactory("reshape", Backend::cpu, copyFactory("reshape"));
  registry.addFactory("concatenate", Backend::cpu, concatenateFactory);
  registry.addFactory("slice", Backend::cpu, sliceFactory);
  registry.addFactory("pad", Backend::cpu, padFactory);
  registry.addFactory("transpose", Backend::cpu, transposeFactory);
}

} // namespace graph::runtime::cpu
