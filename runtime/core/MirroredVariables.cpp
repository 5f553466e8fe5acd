//===- MirroredVariables.cpp - every variable, one copy per device -------===//

#include "runtime/core/MirroredVariables.h"

#include "runtime/core/Initializers.h"
#include "runtime/plan/PlanLoader.h"

#include <cstring>
#include <utility>

namespace graph::runtime {

namespace {

/// `dst` = `src` (f32, of shape `shape`) with its axes permuted: dst axis
/// i is src axis permutation[i].
void transposeAxes(const float *src, const std::vector<int64_t> &shape,
                   const std::vector<int> &permutation, float *dst) {
  size_t rank = shape.size();
  std::vector<int64_t> srcStrides(rank, 1), dstShape(rank), srcStep(rank);
  for (size_t i = rank; i-- > 1;)
    srcStrides[i - 1] = srcStrides[i] * shape[i];
  int64_t elements = 1;
  for (size_t i = 0; i < rank; ++i) {
    dstShape[i] = shape[static_cast<size_t>(permutation[i])];
    srcStep[i] = srcStrides[static_cast<size_t>(permutation[i])];
    elements *= dstShape[i];
  }
  // Walk dst in order with an odometer over its axes.
  std::vector<int64_t> index(rank, 0);
  int64_t from = 0;
  for (int64_t to = 0; to < elements; ++to) {
    dst[to] = src[from];
    for (size_t i = rank; i-- > 0;) {
      from += srcStep[i];
      if (++index[i] < dstShape[i])
        break;
      from -= srcStep[i] * dstShape[i];
      index[i] = 0;
    }
  }
}

/// The permutation that undoes `permutation`.
std::vector<int> inverse(const std::vector<int> &permutation) {
  std::vector<int> inv(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i)
    inv[static_cast<size_t>(permutation[i])] = static_cast<int>(i);
  return inv;
}

/// `shape` with its axes permuted as transposeAxes permutes them.
std::vector<int64_t> permuted(const std::vector<int64_t> &shape,
                              const std::vector<int> &permutation) {
  std::vector<int64_t> out;
  for (int axis : permutation)
    out.push_back(shape[static_cast<size_t>(axis)]);
  return out;
}

} // namespace

Status MirroredVariables::initialize(const plan::Plan &plan, int devices,
                                     uint64_t seed) {
  if (devices < 0)
    return Status::error("variables: a negative device count");
  names_.clear();
  bytes_.clear();
  shapes_.clear();
  permutations_.clear();
  storage_.clear();
  placement_.reset();
  storage_.resize(static_cast<size_t>(devices));
  for (const plan::Variable *v : *plan.variables()) {
    std::string name = v->name()->str();
    if (v->dtype() != plan::DType::f32)
      return Status::error("variable '" + name + "': dtype " +
                           plan::EnumNameDType(v->dtype()) +
                           " is not supported yet (f32 only)");
    std::vector<int64_t> shape(v->shape()->begin(), v->shape()->end());
    std::vector<int> permutation;
    if (v->logical_shape() && v->logical_permutation()) {
      shape.assign(v->logical_shape()->begin(), v->logical_shape()->end());
      permutation.assign(v->logical_permutation()->begin(),
                         v->logical_permutation()->end());
    }
    int64_t bytes = elementCount(v->shape()) * 4;
    names_.push_back(name);
    bytes_.push_back(bytes);
    shapes_.push_back(shape);
    permutations_.push_back(permutation);
    if (devices == 0)
      continue;
    DeviceMemory first;
    if (Status s = allocateHostMemory(bytes, first); !s)
      return Status::error("variable '" + name + "': " + s.message());
    // Drawn in Keras' layout, so a value does not depend on how it is
    // stored (fan-in and fan-out come from Keras' axes), then stored.
    std::vector<float> drawn(
        permutation.empty() ? 0 : static_cast<size_t>(bytes / 4));
    float *values =
        permutation.empty() ? static_cast<float *>(first.data()) : drawn.data();
    if (Status s = initializeVariable(
            name, shape, InitSpec::fromPlan(*v->initializer()), seed, values);
        !s)
      return s;
    if (!permutation.empty())
      transposeAxes(drawn.data(), shape, permutation,
                    static_cast<float *>(first.data()));
    // The other devices get a copy of device 0's values (a broadcast): they
    // would compute the same values anyway.
    for (int d = 1; d < devices; ++d) {
      DeviceMemory copy;
      if (Status s = allocateHostMemory(bytes, copy); !s)
        return Status::error("variable '" + name + "': " + s.message());
      std::memcpy(copy.data(), first.data(), static_cast<size_t>(bytes));
      storage_[d].push_back(std::move(copy));
    }
    storage_[0].push_back(std::move(first));
  }
  return Status::ok();
}

Status MirroredVariables::placeOn(std::shared_ptr<DeviceSet> devices) {
  if (!devices)
    return Status::error("variables: no devices to place them on");
  if (placement_ == devices)
    return Status::ok();
  if (placement_)
    return Status::error("variables: already placed on " +
                         std::string(backendName(placement_->backend())) +
                         " devices; initialize them again to move them");
  if (devices->size() < this->devices())
    return Status::error("variables: " + std::to_string(this->devices()) +
                         " copies do not fit on " +
                         std::to_string(devices->size()) + " devices");
  // Build the placed copies first: on failure the host copies stay valid.
  std::vector<std::vector<DeviceMemory>> placed(storage_.size());
  for (int d = 0; d < this->devices(); ++d) {
    Device &device = devices->device(d);
    for (int v = 0; v < count(); ++v) {
      DeviceMemory memory;
      std::string at = "variable '" + names_[v] + "' on " + device.name();
      if (Status s = device.allocate(bytes_[v], memory); !s)
        return Status::error(at + ": " + s.message());
      if (Status s = device.copyFromHost(memory.data(), storage_[d][v].data(),
                                         static_cast<size_t>(bytes_[v]));
          !s)
        return Status::error(at + ": " + s.message());
      placed[d].push_back(std::move(memory));
    }
  }
  storage_ = std::move(placed);
  placement_ = std::move(devices);
  return Status::ok();
}

int MirroredVariables::find(const std::string &name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name)
      return static_cast<int>(i);
  return -1;
}

Status MirroredVariables::read(int variable, void *dst) const {
  return readCopy(0, variable, dst);
}

Status MirroredVariables::readCopy(int device, int variable, void *dst) const {
  if (variable < 0 || variable >= count())
    return Status::error("variables: no variable " + std::to_string(variable));
  if (device < 0 || device >= devices())
    return Status::error("variables: no device " + std::to_string(device));
  size_t bytes = static_cast<size_t>(bytes_[variable]);
  const std::vector<int> &permutation = permutations_[variable];
  std::vector<float> stored(permutation.empty() ? 0 : bytes / 4);
  void *to = permutation.empty() ? dst : stored.data();
  if (placement_) {
    if (Status s = placement_->device(device).copyToHost(
            to, data(device, variable), bytes);
        !s)
      return s;
  } else {
    std::memcpy(to, data(device, variable), bytes);
  }
  if (!permutation.empty())
    transposeAxes(stored.data(), permuted(shapes_[variable], permutation),
                  inverse(permutation), static_cast<float *>(dst));
  return Status::ok();
}

Status MirroredVariables::write(int variable, const void *src) {
  if (variable < 0 || variable >= count())
    return Status::error("variables: no variable " + std::to_string(variable));
  if (devices() == 0)
    return Status::error("variables: a description, without copies to write");
  size_t bytes = static_cast<size_t>(bytes_[variable]);
  const std::vector<int> &permutation = permutations_[variable];
  std::vector<float> stored(permutation.empty() ? 0 : bytes / 4);
  if (!permutation.empty()) {
    transposeAxes(static_cast<const float *>(src), shapes_[variable],
                  permutation, stored.data());
    src = stored.data();
  }
  for (int d = 0; d < devices(); ++d) {
    if (placement_) {
      if (Status s =
              placement_->device(d).copyFromHost(data(d, variable), src, bytes);
          !s)
        return Status::error("variable '" + names_[variable] +
                             "': " + s.message());
    } else {
      std::memcpy(data(d, variable), src, bytes);
    }
  }
  return Status::ok();
}

} // namespace graph::runtime
