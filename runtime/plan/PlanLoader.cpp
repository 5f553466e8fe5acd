//===- PlanLoader.cpp - reading and checking plan files -------------------===//

#include "runtime/plan/PlanLoader.h"

#include "runtime/base/Crc32c.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

namespace graph::runtime {

size_t dtypeBytes(plan::DType dtype) {
  switch (dtype) {
  case plan::DType::f16:
  case plan::DType::bf16:
    return 2;
  case plan::DType::f32:
  case plan::DType::i32:
    return 4;
  case plan::DType::f64:
  case plan::DType::i64:
    return 8;
  }
  return 0;
}

int64_t elementCount(const flatbuffers::Vector<int64_t> *shape) {
  int64_t n = 1;
  if (shape)
    for (int64_t d : *shape)
      n *= d;
  return n;
}

namespace {

/// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates,
/// nothing past U+10FFFF) without control characters: a variable's name
/// ends up in JSON (safetensors headers) and in messages.
bool isCleanUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char c = byte(i);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f)
        return false;
      ++i;
      continue;
    }
    size_t length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (length == 0 || c > 0xf4 || i + length > text.size())
      return false;
    uint32_t code = c & (0x7f >> length);
    for (size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xc0) != 0x80)
        return false;
      code = (code << 6) | (byte(i + k) & 0x3f);
    }
    static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[length] || code > 0x10ffff ||
        (code >= 0xd800 && code <= 0xdfff) || (code >= 0x80 && code < 0xa0))
      return false;
    i += length;
  }
  return true;
}

/// Whether `vector`'s elements lie at addresses aligned for them.
/// FlatBuffers 2.0's verifier checks a vector's 4-byte length only, so a
/// crafted plan can put int64 elements at addresses a load may not use. (An
/// empty vector may sit anywhere: FlatBuffers does not align it, and no
/// element is loaded.)
template <typename T> bool isAligned(const flatbuffers::Vector<T> *vector) {
  return !vector || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->data()) % alignof(T) == 0;
}

/// The bytes a tensor of `shape` and `dtype` takes, if its dimensions are
/// non-negative and it takes at most kMaxTensorBytes.
std::optional<int64_t> checkedBytes(const flatbuffers::Vector<int64_t> *shape,
                                    plan::DType dtype) {
  if (!shape || !isAligned(shape) || dtypeBytes(dtype) == 0)
    return std::nullopt;
  int64_t bytes = static_cast<int64_t>(dtypeBytes(dtype));
  for (int64_t d : *shape)
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes) ||
        bytes > kMaxTensorBytes)
      return std::nullopt;
  return bytes;
}

/// Collects the first fault found, prefixed with where it is.
class PlanChecker {
public:
  PlanChecker(const plan::Plan &plan, std::string name)
      : plan(plan), name(std::move(name)) {}

  Status check() {
    if (plan.version() != kPlanVersion)
      return fail("plan version " + std::to_string(plan.version()) +
                  ", this graphrun reads version " +
                  std::to_string(kPlanVersion) + ": recompile it with graphc");
    if (!plan.variables() || !plan.inputs() || !plan.programs() ||
        !plan.training())
      return fail("missing variables, inputs, training or programs");
    std::set<std::string_view> names;
    for (const plan::Variable *v : *plan.variables()) {
      std::string_view name(v->name()->c_str(), v->name()->size());
      if (name.empty() || !isCleanUtf8(name))
        return fail("variable #" + std::to_string(names.size()) +
                    " has a name that is empty or not printable UTF-8");
      if (!names.insert(name).second)
        return fail("two variables are named '" + std::string(name) + "'");
      if (!checkedBytes(v->shape(), v->dtype()))
        return fail("variable '" + v->name()->str() +
                    "': " + shapeFault(v->shape(), v->dtype()));
      if (std::string fault = logicalFormFault(*v); !fault.empty())
        return fail("variable '" + v->name()->str() + "': " + fault);
    }
    for (const plan::Input *in : *plan.inputs()) {
      if (!in->shape() || in->shape()->size() == 0)
        return fail("input '" + in->name()->str() + "' has no batch shape");
      if (!checkedBytes(in->shape(), in->dtype()))
        return fail("input '" + in->name()->str() +
                    "': " + shapeFault(in->shape(), in->dtype()));
    }
    if (!attrsAligned(plan.training()->hyper_parameters()))
      return fail("training: misaligned attribute values");
    if (plan.training()->loss() < plan::LossKind::MIN ||
        plan.training()->loss() > plan::LossKind::MAX)
      return fail("training: unknown loss kind " +
                  std::to_string(static_cast<int>(plan.training()->loss())));
    if (plan.training()->loss() == plan::LossKind::binary_accuracy)
      return fail("training: binary_accuracy is a metric, not a loss");
    if (Status s = checkOutputs(); !s)
      return s;
    if (plan.programs()->size() == 0)
      return fail("no program");
    for (const plan::Program *p : *plan.programs()) {
      Status s = checkProgram(*p);
      if (!s)
        return s;
    }
    return Status::ok();
  }

private:
  Status fail(const std::string &what) {
    return Status::error(name + ": invalid plan: " + what);
  }

  /// The model's outputs (each with its labels input, a loss, and a
  /// name when there are several) and the logged values' specs.
  Status checkOutputs() {
    const plan::Training &t = *plan.training();
    if (!t.outputs() || t.outputs()->size() == 0)
      return fail("training: no output");
    std::set<std::string> labels;
    for (const plan::Output *o : *t.outputs()) {
      if (o->loss() < plan::LossKind::MIN || o->loss() > plan::LossKind::MAX ||
          o->loss() == plan::LossKind::binary_accuracy)
        return fail("training: an output has an unknown loss kind " +
                    std::to_string(static_cast<int>(o->loss())));
      std::string input = o->labels()->str();
      if (!isLabelsInput(input) || !labels.insert(input).second)
        return fail("training: output labels input '" + input +
                    "' is not a labels input, or is another output's");
      if (t.outputs()->size() > 1 && (!o->name() || o->name()->size() == 0))
        return fail("training: one of several outputs has no name");
      bool found = false;
      for (const plan::Input *in : *plan.inputs())
        found = found || in->name()->str() == input;
      if (!found)
        return fail("training: no input '" + input +
                    "' for an output's "
                    "labels");
    }
    if (t.metric_specs())
      for (const plan::Metric *m : *t.metric_specs())
        if (m->reduction() < plan::MetricReduction::MIN ||
            m->reduction() > plan::MetricReduction::MAX ||
            m->curve() < plan::AucCurve::MIN ||
            m->curve() > plan::AucCurve::MAX ||
            m->summation() < plan::AucSummation::MIN ||
            m->summation() > plan::AucSummation::MAX)
          return fail("training: metric '" + m->name()->str() +
                      "' has an unknown reduction, curve or summation");
    return Status::ok();
  }

  /// Why checkedBytes refused `shape`.
  static std::string shapeFault(const flatbuffers::Vector<int64_t> *shape,
                                plan::DType dtype) {
    if (!shape || dtypeBytes(dtype) == 0)
      return "no shape or an unknown dtype";
    if (!isAligned(shape))
      return "misaligned shape";
    for (int64_t d : *shape)
      if (d < 0)
        return "negative dimension";
    return "more than " + std::to_string(kMaxTensorBytes >> 30) +
           " GiB in one tensor";
  }

  /// Why a variable's Keras form (logical_shape, logical_permutation) is
  /// not one its stored shape can come from; empty when it is.
  static std::string logicalFormFault(const plan::Variable &v) {
    const auto *shape = v.logical_shape();
    const auto *permutation = v.logical_permutation();
    if (!shape && !permutation)
      return {};
    if (!shape || !permutation || shape->size() != permutation->size() ||
        !isAligned(shape) || !isAligned(permutation))
      return "logical_shape and logical_permutation must come together, "
             "with one axis each";
    std::vector<bool> seen(shape->size(), false);
    for (int32_t axis : *permutation) {
      if (axis < 0 || static_cast<size_t>(axis) >= seen.size() || seen[axis])
        return "logical_permutation is not a permutation";
      seen[axis] = true;
    }
    std::optional<int64_t> logical = checkedBytes(shape, v.dtype());
    if (!logical || *logical != checkedBytes(v.shape(), v.dtype()))
      return "logical_shape does not hold as many elements as the shape";
    return {};
  }

  static bool attrsAligned(
      const flatbuffers::Vector<flatbuffers::Offset<plan::Attr>> *attrs) {
    if (attrs)
      for (const plan::Attr *attr : *attrs)
        if (!isAligned(attr->ints()) || !isAligned(attr->floats()))
          return false;
    return true;
  }

  Status checkProgram(const plan::Program &p) {
    std::string where = "program '" + p.name()->str() + "': ";
    int replicas = p.replicas();
    if (replicas < 1)
      return fail(where + "replicas must be >= 1");
    if (!p.buffers() || !p.ops())
      return fail(where + "no buffers or ops");
    if (!p.arena_bytes() ||
        p.arena_bytes()->size() != static_cast<size_t>(replicas))
      return fail(where + "needs one arena size per device");
    if (!isAligned(p.arena_bytes()))
      return fail(where + "misaligned arena sizes");
    for (int64_t arena : *p.arena_bytes())
      if (arena < 0 || arena > kMaxTensorBytes)
        return fail(where + "arena of " + std::to_string(arena) +
                    " bytes (at most " + std::to_string(kMaxTensorBytes) + ")");
    const auto &buffers = *p.buffers();
    for (size_t i = 0; i < buffers.size(); ++i) {
      const plan::Buffer &b = *buffers[i];
      std::string at = where + "buffer " + std::to_string(i) + ": ";
      if (b.device() < 0 || b.device() >= replicas)
        return fail(at + "device " + std::to_string(b.device()) +
                    " is outside the program's devices");
      std::optional<int64_t> checked = checkedBytes(b.shape(), b.dtype());
      if (!checked)
        return fail(at + shapeFault(b.shape(), b.dtype()));
      int64_t bytes = *checked;
      switch (b.kind()) {
      case plan::BufferKind::arena:
        // Both sides are at most kMaxTensorBytes: no overflow.
        if (b.offset() < 0 ||
            b.offset() > p.arena_bytes()->Get(b.device()) - bytes)
          return fail(at + "bytes [" + std::to_string(b.offset()) + ", +" +
                      std::to_string(bytes) +
                      ") are outside the arena of device " +
                      std::to_string(b.device()));
        break;
      case plan::BufferKind::variable: {
        if (b.variable() < 0 ||
            static_cast<size_t>(b.variable()) >= plan.variables()->size())
          return fail(at + "variable index out of range");
        const plan::Variable &v = *plan.variables()->Get(b.variable());
        if (elementCount(v.shape()) != elementCount(b.shape()))
          return fail(at + "shape differs from variable '" + v.name()->str() +
                      "'");
        break;
      }
      case plan::BufferKind::input:
        if (b.input() < 0 ||
            static_cast<size_t>(b.input()) >= plan.inputs()->size())
          return fail(at + "input index out of range");
        if (b.replica() < 0 || b.replica() >= replicas)
          return fail(at + "replica out of range");
        break;
      case plan::BufferKind::view: {
        if (b.source() < 0 || static_cast<size_t>(b.source()) >= i)
          return fail(at + "a view must follow its source buffer");
        const plan::Buffer &src = *buffers[b.source()];
        if (src.dtype() != b.dtype() || b.offset() < 0 ||
            b.offset() > elementCount(src.shape()) - elementCount(b.shape()))
          return fail(at + "view outside its source buffer");
        break;
      }
      default:
        return fail(at + "unknown buffer kind");
      }
    }
    std::vector<bool> recorded(std::max(0, p.num_events()), false);
    const auto &ops = *p.ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      const plan::Op &op = *ops[i];
      std::string at = where + "op " + std::to_string(i) + ": ";
      if (!attrsAligned(op.config()))
        return fail(at + "misaligned attribute values");
      for (auto *list : {op.ins(), op.outs()})
        if (list)
          for (int32_t index : *list)
            if (index < 0 || static_cast<size_t>(index) >= buffers.size())
              return fail(at + "buffer index " + std::to_string(index) +
                          " out of range");
      bool allDevices = op.kind() == plan::OpKind::all_reduce;
      if (!allDevices && (op.device() < 0 || op.device() >= replicas))
        return fail(at + "device out of range");
      switch (op.kind()) {
      case plan::OpKind::launch:
        if (!op.kernel() || op.kernel()->size() == 0)
          return fail(at + "launch without a kernel");
        break;
      case plan::OpKind::all_reduce:
        if (!op.ins() || op.ins()->size() != static_cast<size_t>(replicas))
          return fail(at + "all_reduce needs one buffer per replica");
        break;
      case plan::OpKind::copy:
        if (!op.ins() || !op.outs() || op.ins()->size() != 1 ||
            op.outs()->size() != 1)
          return fail(at + "copy needs one source and one target");
        break;
      case plan::OpKind::record:
      case plan::OpKind::wait:
        if (op.event() < 0 || op.event() >= p.num_events())
          return fail(at + "event out of range");
        if (op.kind() == plan::OpKind::record)
          recorded[op.event()] = true;
        else if (!recorded[op.event()])
          return fail(at + "waits for event " + std::to_string(op.event()) +
                      " before it is recorded");
        break;
      case plan::OpKind::timestamp:
        if (!op.name())
          return fail(at + "timestamp without a name");
        break;
      case plan::OpKind::output:
        if (!op.name() || !op.ins() || op.ins()->size() != 1)
          return fail(at + "output needs a name and one buffer");
        break;
      default:
        return fail(at + "unknown op kind");
      }
    }
    return Status::ok();
  }

  const plan::Plan &plan;
  std::string name;
};

} // namespace

Status verifyPlan(const uint8_t *data, size_t size, const std::string &name,
                  const plan::Plan *&out) {
  if (size < 8 || !plan::PlanBufferHasIdentifier(data))
    return Status::error(name + ": not a plan file (no 'GPLN' identifier): "
                                "write one with graphc");
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::error(name + ": " + std::to_string(size) +
                         " bytes, more than a FlatBuffers plan can hold");
  // The default limit of 1,000,000 tables rejects the plans of models with
  // some 10,000 layers. A table takes at least 4 bytes, so size / 4 bounds
  // what a well-formed buffer holds, and the verifier's time stays linear
  // in the size.
  flatbuffers::Verifier::Options options;
  options.max_tables = static_cast<flatbuffers::uoffset_t>(
      std::max<size_t>(options.max_tables, size / 4));
  flatbuffers::Verifier verifier(data, size, options);
  if (!plan::VerifyPlanBuffer(verifier))
    return Status::error(name + ": corrupted plan: the FlatBuffers verifier "
                                "rejects it; recompile it with graphc");
  const plan::Plan *p = plan::GetPlan(data);
  Status s = PlanChecker(*p, name).check();
  if (!s)
    return s;
  out = p;
  return Status::ok();
}

Status loadPlan(const std::string &path, LoadedPlan &out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::error(path + ": is a directory, not a plan file (graphc "
                                "writes one with -o)");
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::error(
        path + ": cannot open the plan file: " + std::strerror(errno));
  out.path = path;
  // Read errors come back through the stream state, not as exceptions (a
  // special file may still fail midway).
  std::ostringstream content;
  content << file.rdbuf();
  if (file.bad() || content.bad())
    return Status::error(path + ": cannot read the plan file");
  std::string bytes = std::move(content).str();
  out.bytes.assign(bytes.begin(), bytes.end());
  const size_t n = out.bytes.size();
  // Not a plan at all: the verifier says so by its identifier.
  if (n < 8 || !plan::PlanBufferHasIdentifier(out.bytes.data()))
    return verifyPlan(out.bytes.data(), n, path, out.plan);
  if (n < kPlanTrailerBytes ||
      std::memcmp(out.bytes.data() + n - kPlanTrailerBytes, kPlanTrailerMagic,
                  sizeof kPlanTrailerMagic) != 0)
    return Status::error(path + ": a plan cut short, or written by an older "
                                "graphc (no checksum at its end): compile it "
                                "again with graphc");
  const uint8_t *crc = out.bytes.data() + n - 4;
  uint32_t stored = uint32_t(crc[0]) | uint32_t(crc[1]) << 8 |
                    uint32_t(crc[2]) << 16 | uint32_t(crc[3]) << 24;
  if (crc32c(out.bytes.data(), n - kPlanTrailerBytes) != stored)
    return Status::error(path + ": the plan is corrupt: its checksum does "
                                "not match its contents (a changed byte "
                                "would train another model); compile it "
                                "again with graphc");
  out.bytes.resize(n - kPlanTrailerBytes);
  return verifyPlan(out.bytes.data(), out.bytes.size(), path, out.plan);
}

double trainingHyperParameter(const plan::Plan &plan, std::string_view name,
                              double fallback) {
  const plan::Training *t = plan.training();
  if (t && t->hyper_parameters())
    for (const plan::Attr *a : *t->hyper_parameters())
      if (a->name()->string_view() == name)
        return a->kind() == plan::AttrKind::int_ ? static_cast<double>(a->i())
                                                 : a->f();
  return fallback;
}

void appendPlanChecksum(std::vector<uint8_t> &bytes) {
  uint32_t crc = crc32c(bytes.data(), bytes.size());
  bytes.insert(bytes.end(), kPlanTrailerMagic,
               kPlanTrailerMagic + sizeof kPlanTrailerMagic);
  for (int i = 0; i < 4; ++i)
    bytes.push_back(static_cast<uint8_t>(crc >> (8 * i)));
}

} // namespace graph::runtime
