//===- TinyPlan.h - a hand-built plan for the runtime tests -----*- C++ -*-===//
//
// One tiny training plan, built with FlatBuffers, for the executor tests
// (test/runtime/core) and the GPU runtime tests (test/runtime/gpu), over
// kernels each test registers: per replica loss = sum(x * w), g = column
// sums of x, a cross-device event hands g to device 0's comm stream,
// all-reduce mean of g, then the update kernel (the GPU tests' sgd_step
// scales by the step, so a replayed graph that froze it goes wrong).
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_TINYPLAN_H
#define TEST_RUNTIME_TINYPLAN_H

#include "runtime/core/Kernel.h"
#include "runtime/data/Batch.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/plan_generated.h"

#include <cstdint>
#include <string>
#include <vector>

namespace graph::runtime::testplan {

namespace plan = graph::plan;

/// [batch, 1, 1, 2] images, [batch, 2] one-hot labels, w[2] = ones.
/// `firstKernel` is the first launch (tests of failures and missing kernels
/// replace it); `updateKernel` applies g to w with learning_rate 0.1.
inline std::vector<uint8_t>
buildTinyPlan(int replicas, int64_t batch, const char *firstKernel = "test.mul",
              const char *updateKernel = "test.sgd_step") {
  flatbuffers::FlatBufferBuilder b;
  std::vector<int64_t> wShape{2};
  auto initializer = plan::CreateInitializer(b, plan::InitKind::ones);
  std::vector<flatbuffers::Offset<plan::Variable>> vars{
      plan::CreateVariableDirect(b, "w", &wShape, plan::DType::f32,
                                 initializer)};
  std::vector<int64_t> xShape{batch, 1, 1, 2}, lShape{batch, 2};
  std::vector<flatbuffers::Offset<plan::Input>> inputs{
      plan::CreateInputDirect(b, "input_layer", &xShape),
      plan::CreateInputDirect(b, "labels", &lShape)};

  int64_t rows = batch / replicas;
  std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
  std::vector<flatbuffers::Offset<plan::Op>> ops;
  std::vector<int32_t> grads, losses, ws;
  std::vector<int64_t> arenas;
  int events = 0;
  auto buffer = [&](plan::BufferKind kind, int device,
                    std::vector<int64_t> shape, int64_t offset = 0,
                    int variable = -1, int input = -1, int replica = -1) {
    buffers.push_back(plan::CreateBufferDirect(b, kind, device, &shape,
                                               plan::DType::f32, offset,
                                               variable, input, replica));
    return static_cast<int32_t>(buffers.size() - 1);
  };
  auto timestamp = [&](const char *name, int device,
                       plan::StreamKind stream = plan::StreamKind::compute) {
    ops.push_back(plan::CreateOpDirect(b, plan::OpKind::timestamp, stream,
                                       device, nullptr, nullptr, nullptr,
                                       nullptr, -1, name));
  };
  auto launch = [&](const char *kernel, int device, std::vector<int32_t> ins,
                    std::vector<int32_t> outs,
                    std::vector<flatbuffers::Offset<plan::Attr>> *config =
                        nullptr) {
    ops.push_back(plan::CreateOpDirect(b, plan::OpKind::launch,
                                       plan::StreamKind::compute, device,
                                       kernel, &ins, &outs, config));
  };
  for (int d = 0; d < replicas; ++d) {
    timestamp("step_begin", d);
    int32_t x =
        buffer(plan::BufferKind::input, d, {rows, 1, 1, 2}, 0, -1, 0, d);
    buffer(plan::BufferKind::input, d, {rows, 2}, 0, -1, 1, d);
    int32_t w = buffer(plan::BufferKind::variable, d, {2}, 0, 0);
    // Arena offsets 256-byte aligned, as the memory planner makes them.
    int64_t yBytes = (rows * 8 + 255) / 256 * 256;
    int32_t y = buffer(plan::BufferKind::arena, d, {rows, 1, 1, 2}, 0);
    int32_t loss = buffer(plan::BufferKind::arena, d, {}, yBytes);
    int32_t g = buffer(plan::BufferKind::arena, d, {2}, yBytes + 256);
    arenas.push_back(yBytes + 512);
    timestamp("forward_begin", d);
    launch(firstKernel, d, {x, w}, {y});
    launch("test.sum", d, {y}, {loss});
    timestamp("backward_begin", d);
    launch("test.colsum", d, {x}, {g});
    losses.push_back(loss);
    ws.push_back(w);
    grads.push_back(g);
    if (replicas > 1) {
      // Device d's compute stream hands its gradient to device 0's comm
      // stream: a cross-device wait.
      ops.push_back(plan::CreateOpDirect(b, plan::OpKind::record,
                                         plan::StreamKind::compute, d, nullptr,
                                         nullptr, nullptr, nullptr, events));
      ops.push_back(plan::CreateOpDirect(b, plan::OpKind::wait,
                                         plan::StreamKind::comm, 0, nullptr,
                                         nullptr, nullptr, nullptr, events));
      ++events;
      // And to its own comm stream, which runs the all-reduce.
      ops.push_back(plan::CreateOpDirect(b, plan::OpKind::record,
                                         plan::StreamKind::compute, d, nullptr,
                                         nullptr, nullptr, nullptr, events));
      ops.push_back(plan::CreateOpDirect(b, plan::OpKind::wait,
                                         plan::StreamKind::comm, d, nullptr,
                                         nullptr, nullptr, nullptr, events));
      ++events;
    }
  }
  if (replicas > 1) {
    for (int d = 0; d < replicas; ++d)
      timestamp("allreduce_begin", d, plan::StreamKind::comm);
    ops.push_back(plan::CreateOpDirect(
        b, plan::OpKind::all_reduce, plan::StreamKind::comm, -1, nullptr,
        &grads, nullptr, nullptr, -1, nullptr, -1, 0, "mean"));
    for (int d = 0; d < replicas; ++d) {
      timestamp("allreduce_end", d, plan::StreamKind::comm);
      // The reduced gradient goes back to the compute stream.
      ops.push_back(plan::CreateOpDirect(b, plan::OpKind::record,
                                         plan::StreamKind::comm, d, nullptr,
                                         nullptr, nullptr, nullptr, events));
      ops.push_back(plan::CreateOpDirect(b, plan::OpKind::wait,
                                         plan::StreamKind::compute, d, nullptr,
                                         nullptr, nullptr, nullptr, events));
      ++events;
    }
  }
  for (int d = 0; d < replicas; ++d) {
    timestamp("update_begin", d);
    std::vector<flatbuffers::Offset<plan::Attr>> config{plan::CreateAttrDirect(
        b, "learning_rate", plan::AttrKind::float_, 0, 0.1)};
    launch(updateKernel, d, {ws[d], grads[d]}, {ws[d]}, &config);
    std::vector<int32_t> in{losses[d]};
    ops.push_back(plan::CreateOpDirect(b, plan::OpKind::output,
                                       plan::StreamKind::compute, d, nullptr,
                                       &in, nullptr, nullptr, -1, "loss", d));
    timestamp("step_end", d);
  }
  std::string name = "train_x" + std::to_string(replicas);
  std::vector<flatbuffers::Offset<plan::Program>> programs{
      plan::CreateProgramDirect(b, name.c_str(), plan::ProgramKind::train,
                                replicas, &buffers, &ops, events, &arenas)};
  // One output, whose labels are the "labels" input.
  std::vector<flatbuffers::Offset<plan::Output>> outputs{
      plan::CreateOutputDirect(b, "", plan::LossKind::categorical_crossentropy,
                               false, "labels", "predictions")};
  auto training = plan::CreateTrainingDirect(
      b, plan::LossKind::categorical_crossentropy, false,
      plan::OptimizerKind::sgd, nullptr, nullptr, batch, nullptr, &outputs);
  b.Finish(plan::CreatePlanDirect(b, kPlanVersion, "tiny", &vars, &inputs,
                                  training, &programs),
           plan::PlanIdentifier());
  return std::vector<uint8_t>(b.GetBufferPointer(),
                              b.GetBufferPointer() + b.GetSize());
}

/// `rows` rows of [1, 1, 2] images that differ from step to step.
/// The plan's host kernels after the first: "test.sum" (the loss, the sum
/// of all elements), "test.colsum" (g[j], the column sums of x) and
/// "test.sgd" (w -= learning_rate * g, in place: ins w, g; outs w).
inline Status sumKernel(const KernelContext &, const KernelConfig &,
                        const std::vector<TensorRef> &ins,
                        const std::vector<TensorRef> &outs) {
  float s = 0;
  for (int64_t i = 0; i < ins[0].elements(); ++i)
    s += ins[0].f32()[i];
  outs[0].f32()[0] = s;
  return Status::ok();
}
inline Status colSumKernel(const KernelContext &, const KernelConfig &,
                           const std::vector<TensorRef> &ins,
                           const std::vector<TensorRef> &outs) {
  int64_t cols = outs[0].elements();
  for (int64_t j = 0; j < cols; ++j)
    outs[0].f32()[j] = 0;
  for (int64_t i = 0; i < ins[0].elements(); ++i)
    outs[0].f32()[i % cols] += ins[0].f32()[i];
  return Status::ok();
}
inline Status sgdKernel(const KernelContext &, const KernelConfig &config,
                        const std::vector<TensorRef> &ins,
                        const std::vector<TensorRef> &outs) {
  float lr = static_cast<float>(config.getFloat("learning_rate", 0.1));
  for (int64_t i = 0; i < outs[0].elements(); ++i)
    outs[0].f32()[i] = ins[0].f32()[i] - lr * ins[1].f32()[i];
  return Status::ok();
}

inline data::Batch tinyBatch(int64_t rows, int step) {
  data::Batch batch;
  batch.size = rows;
  batch.shape = {1, 1, 2};
  batch.numClasses = 2;
  batch.labelFormat = data::LabelFormat::OneHot;
  for (int64_t r = 0; r < rows; ++r) {
    batch.images.push_back(0.25f * static_cast<float>(r + 1 + step));
    batch.images.push_back(-0.5f * static_cast<float>(r + 1) + 0.125f * step);
    batch.oneHotLabels.push_back(1);
    batch.oneHotLabels.push_back(0);
    batch.sourceIndices.push_back(r);
  }
  return batch;
}

} // namespace graph::runtime::testplan

#endif // TEST_RUNTIME_TINYPLAN_H
