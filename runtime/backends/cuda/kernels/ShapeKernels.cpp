//===- ShapeKernels.cpp - flatten, reshape, concatenate, slice, pad, ... -===//
//
// Copies only, so no kernels of their own: flatten and reshape are one
// device-to-device copy (none when the plan gives both the same buffer),
// concatenate and slice one strided 2D copy per input, [outer] rows of
// (extent along the axis x inner) elements. Async copies on the compute
// stream are legal in a captured CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/CudaKernels.h"

namespace graph::runtime::cuda {

namespace {

/// flatten and reshape: the same elements, another shape.
KernelFactory copyFactory(const char *name) {
  return [name](const KernelContext &ctx, const KernelConfig &,
                const Tensors &ins, const Tensors &outs, KernelFn &out) {
    const char *kName = name;
    RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
    REQUIRE(outs[0].elements() == ins[0].elements(),
            "changes the element count: " + shapeText(ins[0].shape) + " to " +
                shapeText(outs[0].shape));
    CudaDeviceState *state = nullptr;
    RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
    const void *src = ins[0].data;
    void *dst = outs[0].data;
    size_t bytes = size_t(ins[0].elements()) * sizeof(float);
    out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
              const Tensors &) {
      if (src != dst && bytes)
        RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(
            dst, src, bytes, cudaMemcpyDeviceToDevice, state->compute));
      return Status::ok();
    };
    return Status::ok();
  };
}

/// `shape` as [outer, size, inner] around `axis` (negative counts from the
/// end).
Status splitAxis(const char *kName, const std::vector<int64_t> &shape,
                 int64_t axis, int64_t &outer, int64_t &size, int64_t &inner,
                 int64_t &normalized) {
  int64_t rank = static_cast<int64_t>(shape.size());
  normalized = axis < 0 ? axis + rank : axis;
  REQUIRE(normalized >= 0 && normalized < rank, "axis " + std::to_string(axis) +
                                                    " out of range for " +
                                                    shapeText(shape));
  outer = inner = 1;
  for (int64_t d = 0; d < normalized; ++d)
    outer *= shape[d];
  for (int64_t d = normalized + 1; d < rank; ++d)
    inner *= shape[d];
  size = shape[normalized];
  return Status::ok();
}

/// One strided copy: `rows` rows of `width` bytes.
struct Copy2D {
  void *dst = nullptr;
  size_t dstPitch = 0;
  const void *src = nullptr;
  size_t srcPitch = 0;
  size_t width = 0, rows = 0;
};

KernelFn copiesFn(CudaDeviceState *state, std::vector<Copy2D> copies) {
  return [state, copies](const KernelContext &, const KernelConfig &,
                         const Tensors &, const Tensors &) {
    for (const Copy2D &c : copies) {
      if (!c.width || !c.rows)
        continue;
      // One row needs no pitch, whose size the 2D copy limits.
      if (c.rows == 1)
        RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(
            c.dst, c.src, c.width, cudaMemcpyDeviceToDevice, state->compute));
      else
        RETURN_IF_CUDA_ERROR(cudaMemcpy2DAsync(
            c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.rows,
            cudaMemcpyDeviceToDevice, state->compute));
    }
    return Status::ok();
  };
}

Status concatenate(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "concatenate";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1 << 20, 1));
  int64_t outer, size, inner, axis;
  RETURN_IF_ERROR(splitAxis(kName, outs[0].shape, cfg.getInt("axis", -1), outer,
                            size, inner, axis));
  std::vector<Copy2D> copies;
  int64_t offset = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const TensorRef &t = ins[i];
    REQUIRE(t.shape.size() == outs[0].shape.size(),
            "input " + std::to_string(i) + " " + shapeText(t.shape) +
                " and output " + shapeText(outs[0].shape) + " differ in rank");
    for (size_t d = 0; d < t.shape.size(); ++d)
      REQUIRE(static_cast<int64_t>(d) == axis || t.shape[d] == outs[0].shape[d],
              "input " + std::to_string(i) + " " + shapeText(t.shape) +
                  " differs from output " + shapeText(outs[0].shape) +
                  " off the axis");
    int64_t extent = t.shape[axis];
    Copy2D c;
    c.src = t.data;
    c.width = c.srcPitch = size_t(extent * inner) * sizeof(float);
    c.dst = outs[0].f32() + offset * inner;
    c.dstPitch = size_t(size * inner) * sizeof(float);
    c.rows = size_t(outer);
    copies.push_back(c);
    offset += extent;
  }
  REQUIRE(offset == size, "inputs add up to " + std::to_string(offset) +
                              " along the axis, the output has " +
                              std::to_string(size));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  out = copiesFn(state, std::move(copies));
  return Status::ok();
}

/// The output's extent along `axis`, starting at `offset`.
Status slice(const KernelContext &ctx, const KernelConfig &cfg,
             const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "slice";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  int64_t outer, size, inner, axis;
  RETURN_IF_ERROR(splitAxis(kName, ins[0].shape, cfg.getInt("axis", -1), outer,
                            size, inner, axis));
  REQUIRE(outs[0].shape.size() == ins[0].shape.size(),
          "input " + shapeText(ins[0].shape) + " and output " +
              shapeText(outs[0].shape) + " differ in rank");
  for (size_t d = 0; d < ins[0].shape.size(); ++d)
    REQUIRE(static_cast<int64_t>(d) == axis ||
                ins[0].shape[d] == outs[0].shape[d],
            "output " + shapeText(outs[0].shape) + " differs from input " +
                shapeText(ins[0].shape) + " off the axis");
  int64_t extent = outs[0].shape[axis], offset = cfg.getInt("offset", 0);
  REQUIRE(offset >= 0 && offset + extent <= size,
          "slice [" + std::to_string(offset) + ", " +
              std::to_string(offset + extent) + ") out of range [0, " +
              std::to_string(size) + ")");
  Copy2D c;
  c.src = ins[0].f32() + offset * inner;
  c.srcPitch = size_t(size * inner) * sizeof(float);
  c.dst = outs[0].data;
  c.width = c.dstPitch = size_t(extent * inner) * sizeof(float);
  c.rows = size_t(outer);
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  out = copiesFn(state, {c});
  return Status::ok();
}

/// Zero-pads (positive amounts) or crops (negative) H and W of an NHWC
/// tensor: LayoutKernels.cu's padding kernel, whose geometry may be
/// negative, does both.
Status pad(const KernelContext &ctx, const KernelConfig &cfg,
           const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "pad";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  const std::vector<int64_t> &in = ins[0].shape, &res = outs[0].shape;
  std::vector<int64_t> low = cfg.getInts("low"), high = cfg.getInts("high");
  REQUIRE(in.size() == 4 && res.size() == 4 && low.size() == 4 &&
              high.size() == 4,
          "expects NHWC input " + shapeText(in) + " and output " +
              shapeText(res) + " with 4 low and 4 high amounts");
  REQUIRE(low[0] == 0 && high[0] == 0 && low[3] == 0 && high[3] == 0,
          "pads or crops H and W only");
  for (size_t d = 0; d < 4; ++d)
    REQUIRE(in[d] + low[d] + high[d] == res[d],
            "output " + shapeText(res) + " is not the padded input " +
                shapeText(in) + " on axis " + std::to_string(d));
  NhwcPadding g;
  g.n = in[0];
  g.h = in[1];
  g.w = in[2];
  g.c = in[3];
  g.top = low[1];
  g.bottom = high[1];
  g.left = low[2];
  g.right = high[2];
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  out = [state, g](const KernelContext &, const KernelConfig &,
                   const Tensors &ins, const Tensors &outs) {
    RETURN_IF_CUDA_ERROR(
        launchPadNhwc(ins[0].f32(), outs[0].f32(), g, state->compute));
    return Status::ok();
  };
  return Status::ok();
}

/// Output axis d is input axis permutation[d] (LayoutKernels.cu).
Status transpose(const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "transpose";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  const std::vector<int64_t> &in = ins[0].shape, &res = outs[0].shape;
  std::vector<int64_t> perm = cfg.getInts("permutation");
  size_t rank = in.size();
  REQUIRE(rank >= 1 && rank <= size_t(PermuteGeometry::kMaxRank) &&
              res.size() == rank && perm.size() == rank,
          "expects input " + shapeText(in) + ", output " + shapeText(res) +
              " and permutation of one rank in 1.." +
              std::to_string(PermuteGeometry::kMaxRank));
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    stride[d - 1] = stride[d] * in[d];
  std::vector<bool> seen(rank, false);
  PermuteGeometry g;
  g.rank = static_cast<int>(rank);
  for (size_t d = 0; d < rank; ++d) {
    REQUIRE(perm[d] >= 0 && perm[d] < int64_t(rank) && !seen[perm[d]],
            "permutation is not one of 0.." + std::to_string(rank - 1));
    seen[perm[d]] = true;
    REQUIRE(res[d] == in[perm[d]], "output " + shapeText(res) +
                                       " is not the permuted input " +
                                       shapeText(in));
    g.outDims[d] = res[d];
    g.from[d] = stride[perm[d]];
  }
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  out = [state, g](const KernelContext &, const KernelConfig &,
                   const Tensors &ins, const Tensors &outs) {
    RETURN_IF_CUDA_ERROR(
        launchPermute(ins[0].f32(), outs[0].f32(), g, state->compute));
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerShapeKernels() {
  KernelRegistry &r = KernelRegistry::global();
  r.addFactory("flatten", Backend::cuda, copyFactory("flatten"));
  r.addFactory("reshape", Backend::cuda, copyFactory("reshape"));
  r.addFactory("concatenate", Backend::cuda, concatenate);
  r.addFactory("slice", Backend::cuda, slice);
  r.addFactory("pad", Backend::cuda, pad);
  r.addFactory("transpose", Backend::cuda, transpose);
}

} // namespace graph::runtime::cuda
