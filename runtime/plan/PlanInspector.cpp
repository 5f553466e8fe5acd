//===- PlanInspector.cpp - a human-readable summary of a plan -------------===//

#include "runtime/plan/PlanInspector.h"
#include "runtime/plan/PlanLoader.h"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace graph::runtime {

static std::string bytesText(int64_t bytes) {
  char text[32];
  if (bytes >= (1 << 20))
    std::snprintf(text, sizeof text, "%.2f MiB", bytes / 1048576.0);
  else if (bytes >= 1024)
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  return text;
}

static std::string shapeText(const flatbuffers::Vector<int64_t> *shape) {
  std::string text;
  if (shape)
    for (size_t i = 0; i < shape->size(); ++i) {
      if (i)
        text += 'x';
      text += std::to_string(shape->Get(i));
    }
  return text;
}

std::string describePlan(const plan::Plan &p) {
  std::ostringstream os;
  // As Keras' model.summary(): the model's weights, trainable or not, and
  // not the optimizer's slots.
  std::set<std::string> names;
  for (const plan::Variable *v : *p.variables())
    names.insert(v->name()->str());
  int64_t trainable = 0, frozen = 0, slots = 0;
  for (const plan::Variable *v : *p.variables()) {
    if (isOptimizerSlotName(v->name()->string_view(),
                            [&](std::string_view prefix) {
                              return names.count(std::string(prefix)) > 0;
                            }))
      slots += elementCount(v->shape());
    else
      (v->trainable() ? trainable : frozen) += elementCount(v->shape());
  }
  os << "plan: model '" << (p.model() ? p.model()->str() : "") << "', version "
     << p.version() << "\n";
  os << "variables: " << p.variables()->size() << " (" << trainable
     << " trainable and " << frozen << " non-trainable parameters, " << slots
     << " in optimizer slots)\n";
  os << "inputs:";
  for (const plan::Input *in : *p.inputs())
    os << " " << in->name()->str() << "[" << shapeText(in->shape()) << "] "
       << plan::EnumNameDType(in->dtype());
  os << "\n";
  const plan::Training &t = *p.training();
  os << "training: " << plan::EnumNameLossKind(t.loss())
     << (t.from_logits() ? " (from logits)" : "") << ", "
     << plan::EnumNameOptimizerKind(t.optimizer()) << "(";
  if (t.hyper_parameters())
    for (size_t i = 0; i < t.hyper_parameters()->size(); ++i) {
      const plan::Attr &a = *t.hyper_parameters()->Get(i);
      os << (i ? ", " : "") << a.name()->str() << "=" << a.f();
    }
  os << "), global batch " << t.global_batch_size() << "\n";
  if (t.outputs() && t.outputs()->size() > 1) {
    os << "outputs:";
    for (const plan::Output *o : *t.outputs())
      os << " " << o->name()->str() << " (" << plan::EnumNameLossKind(o->loss())
         << (o->from_logits() ? ", from logits" : "") << ")";
    os << "\n";
  }
  if (t.metrics() && t.metrics()->size() > 0) {
    os << "logs: loss";
    for (size_t i = 0; i < t.metrics()->size(); ++i) {
      os << ", " << t.metrics()->Get(i)->str();
      if (t.metric_specs() && i < t.metric_specs()->size() &&
          t.metric_specs()->Get(i)->reduction() != plan::MetricReduction::mean)
        os << " ("
           << plan::EnumNameMetricReduction(
                  t.metric_specs()->Get(i)->reduction())
           << ")";
    }
    os << "\n";
  }

  for (const plan::Program *prog : *p.programs()) {
    os << "program " << prog->name()->str() << " ("
       << plan::EnumNameProgramKind(prog->kind()) << ", " << prog->replicas()
       << " replica" << (prog->replicas() > 1 ? "s" : "")
       << "): " << prog->ops()->size() << " ops, " << prog->buffers()->size()
       << " buffers, " << prog->num_events() << " events\n";
    std::map<std::string, int> byKind, byKernel;
    std::set<std::pair<int, int>> streams;
    std::map<int, int64_t> bucketBytes;
    for (const plan::Op *op : *prog->ops()) {
      ++byKind[plan::EnumNameOpKind(op->kind())];
      if (op->kind() == plan::OpKind::launch)
        ++byKernel[op->kernel()->str()];
      if (op->kind() == plan::OpKind::all_reduce) {
        const plan::Buffer &b = *prog->buffers()->Get(op->ins()->Get(0));
        bucketBytes[op->bucket()] =
            elementCount(b.shape()) * dtypeBytes(b.dtype());
        for (int d = 0; d < prog->replicas(); ++d)
          streams.insert({static_cast<int>(plan::StreamKind::comm), d});
      } else {
        streams.insert({static_cast<int>(op->stream()), op->device()});
      }
    }
    os << "  ops:";
    for (auto &[kind, n] : byKind)
      os << " " << kind << " " << n;
    os << "\n  kernels:";
    for (auto &[kernel, n] : byKernel)
      os << " " << kernel << " " << n;
    os << "\n  buckets:";
    if (bucketBytes.empty())
      os << " none";
    for (auto &[bucket, bytes] : bucketBytes)
      os << " #" << bucket << " " << bytesText(bytes);
    os << "\n  streams:";
    for (auto &[kind, device] : streams)
      os << " " << plan::EnumNameStreamKind(static_cast<plan::StreamKind>(kind))
         << "/" << device;
    std::map<int, int64_t> allocated;
    for (const plan::Buffer *b : *prog->buffers())
      if (b->kind() == plan::BufferKind::arena)
        allocated[b->device()] +=
            elementCount(b->shape()) * dtypeBytes(b->dtype());
    os << "\n  arenas:";
    for (int d = 0; d < prog->replicas(); ++d)
      os << " device " << d << " " << bytesText(prog->arena_bytes()->Get(d))
         << " (buffers " << bytesText(allocated[d]) << ")"
         << (d + 1 < prog->replicas() ? "," : "");
    os << "\n";
  }
  return os.str();
}

} // namespace graph::runtime
