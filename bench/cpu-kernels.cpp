//===- cpu-kernels.cpp - the cpu backend's kernels on the seed model ------===//
//
// Times every oneDNN-backed launch, and the gradient norm, of one training
// step of the seed Fashion-MNIST CNN (examples/fashion_mnist_cnn.json) at
// its real shapes, instantiated through the kernel registry exactly as the
// executor does, and prints milliseconds per launch and their sum: the part
// of a step these kernels account for.
//
//   cpu-kernels [--batch 256] [--replicas 1] [--reps 20]
//
// --replicas N runs the per-replica batch (batch / N) on the thread share a
// replica gets (threadsPerReplica), one replica at a time.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace graph::runtime;

namespace {

struct Launch {
  std::string name, what;
  KernelConfig cfg;
  std::vector<std::vector<int64_t>> ins, outs;
};

KernelConfig conv(const std::string &activation = "") {
  KernelConfig cfg;
  cfg.set("padding", std::string("valid"))
      .set("strides", std::vector<int64_t>{1, 1})
      .set("dilations", std::vector<int64_t>{1, 1});
  if (!activation.empty())
    cfg.set("activation", activation);
  return cfg;
}

KernelConfig pool() {
  KernelConfig cfg;
  cfg.set("padding", std::string("valid"))
      .set("strides", std::vector<int64_t>{2, 2})
      .set("pool_size", std::vector<int64_t>{2, 2});
  return cfg;
}

KernelConfig activation(const std::string &name) {
  KernelConfig cfg;
  cfg.set("activation", name);
  return cfg;
}

/// The seed model's launches that the oneDNN half runs, batch `b`.
std::vector<Launch> seedStep(int64_t b) {
  using S = std::vector<int64_t>;
  S x0{b, 28, 28, 1}, y1{b, 26, 26, 32}, p1{b, 13, 13, 32}, y2{b, 11, 11, 64},
      p2{b, 5, 5, 64}, y3{b, 3, 3, 64}, f{b, 576}, d1{b, 64}, d2{b, 10};
  S k1{3, 3, 1, 32}, k2{3, 3, 32, 64}, k3{3, 3, 64, 64}, w1{576, 64},
      w2{64, 10};
  return {
      {"fused_conv2d", "conv 1", conv("relu"), {x0, k1, {32}}, {y1}},
      {"max_pool2d", "pool 1", pool(), {y1}, {p1}},
      {"fused_conv2d", "conv 2", conv("relu"), {p1, k2, {64}}, {y2}},
      {"max_pool2d", "pool 2", pool(), {y2}, {p2}},
      {"fused_conv2d", "conv 3", conv("relu"), {p2, k3, {64}}, {y3}},
      {"fused_dense", "dense 1", activation("relu"), {f, w1, {64}}, {d1}},
      {"fused_dense", "dense 2", activation("none"), {d1, w2, {10}}, {d2}},
      {"dense_grad_kernel", "dense 2", {}, {d1, d2}, {w2}},
      {"dense_grad_input", "dense 2", {}, {d2, w2}, {d1}},
      {"dense_grad_kernel", "dense 1", {}, {f, d1}, {w1}},
      {"dense_grad_input", "dense 1", {}, {d1, w1}, {f}},
      {"conv2d_grad_kernel", "conv 3", conv(), {p2, y3}, {k3}},
      {"conv2d_grad_input", "conv 3", conv(), {y3, k3}, {p2}},
      {"max_pool2d_grad", "pool 2", pool(), {y2, p2, p2}, {y2}},
      {"conv2d_grad_kernel", "conv 2", conv(), {p1, y2}, {k2}},
      {"conv2d_grad_input", "conv 2", conv(), {y2, k2}, {p1}},
      {"max_pool2d_grad", "pool 1", pool(), {y1, p1, p1}, {y1}},
      {"conv2d_grad_kernel", "conv 1", conv(), {x0, y1}, {k1}},
      // The NaN guard's part of the step: the norm of every gradient.
      {"global_norm",
       "grads",
       {},
       {k1, {32}, k2, {64}, k3, {64}, w1, {64}, w2, {10}},
       {{}}},
  };
}

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Times the cpu backend's oneDNN kernels on the seed model"};
  int64_t batch = 256;
  int replicas = 1, reps = 20;
  app.add_option("--batch", batch, "global batch");
  app.add_option("--replicas", replicas, "replicas sharing the threads")
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed runs per launch")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (batch % replicas != 0) {
    std::fprintf(stderr,
                 "cpu-kernels: --batch %lld is not divisible by "
                 "--replicas %d\n",
                 static_cast<long long>(batch), replicas);
    return 1;
  }

  cpu::registerCpuKernels();
  KernelContext ctx;
  ctx.replicas = replicas;
  int64_t b = batch / replicas;
  std::printf("batch %lld per replica, %d thread(s)\n",
              static_cast<long long>(b), cpu::threadsPerReplica(replicas));
  std::printf("%-20s %-8s %10s\n", "kernel", "layer", "ms");
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  double total = 0;
  for (Launch &l : seedStep(b)) {
    std::vector<std::vector<float>> storage;
    std::vector<TensorRef> ins, outs;
    auto make = [&](const std::vector<int64_t> &shape,
                    std::vector<TensorRef> &to) {
      storage.emplace_back(elements(shape));
      for (float &v : storage.back())
        v = dist(gen);
      to.push_back({nullptr, shape, graph::plan::DType::f32});
    };
    storage.reserve(l.ins.size() + l.outs.size());
    for (const auto &s : l.ins)
      make(s, ins);
    for (const auto &s : l.outs)
      make(s, outs);
    for (size_t i = 0; i < ins.size(); ++i)
      ins[i].data = storage[i].data();
    for (size_t i = 0; i < outs.size(); ++i)
      outs[i].data = storage[ins.size() + i].data();
    KernelFn fn;
    if (Status s = KernelRegistry::global().instantiate(
            l.name, Backend::cpu, ctx, l.cfg, ins, outs, fn);
        !s) {
      std::fprintf(stderr, "cpu-kernels: %s\n", s.message().c_str());
      return 1;
    }
    for (int i = 0; i < 3; ++i) // warm-up: first-touch, jit, caches
      (void)fn(ctx, l.cfg, ins, outs);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      if (Status s = fn(ctx, l.cfg, ins, outs); !s) {
        std::fprintf(stderr, "cpu-kernels: %s\n", s.message().c_str());
        return 1;
      }
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count() /
                reps;
    total += ms;
    std::printf("%-20s %-8s %10.3f\n", l.name.c_str(), l.what.c_str(), ms);
  }
  std::printf("%-29s %10.3f\n", "total", total);
  return 0;
}
