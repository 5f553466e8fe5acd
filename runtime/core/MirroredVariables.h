//===- MirroredVariables.h - every variable, one copy per device -*- C++
//-*-===//
//
// TensorFlow's mirrored variables: the state of a run, shared by its
// training and evaluation executors, checkpoints and weight files. It
// speaks Keras' layouts outside the devices, whatever layout a variable is
// stored in on them.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_MIRROREDVARIABLES_H
#define RUNTIME_CORE_MIRROREDVARIABLES_H

#include "runtime/base/Status.h"
#include "runtime/core/Device.h"
#include "runtime/plan/plan_generated.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace graph::runtime {

/// Every variable of a plan, one copy per device (TensorFlow's mirrored
/// variables). All copies start from the same values: the initializers are
/// keyed by name and seed, not by device. They are initialized in host
/// memory (64-byte aligned); placeOn() moves them into a DeviceSet's memory
/// (the CUDA executor does, so each replica's copy is in its GPU's memory).
class MirroredVariables {
public:
  /// Allocates and initializes `devices` copies of the plan's variables in
  /// host memory. With `devices` 0, their names, shapes and layouts alone,
  /// nothing allocated or drawn: a description of the plan's variables,
  /// which read() and write() refuse.
  Status initialize(const plan::Plan &plan, int devices, uint64_t seed);
  /// Moves every copy into the memory of `devices` (copy d to device d):
  /// host-initialized values, copied once. A no-op when already there.
  Status placeOn(std::shared_ptr<DeviceSet> devices);
  /// The DeviceSet holding the copies; null while they are in host memory.
  const std::shared_ptr<DeviceSet> &placement() const { return placement_; }

  int devices() const { return static_cast<int>(storage_.size()); }
  int count() const { return static_cast<int>(names_.size()); }
  const std::string &name(int variable) const { return names_[variable]; }
  int64_t bytes(int variable) const { return bytes_[variable]; }
  /// Device `device`'s copy: a device pointer once placed on a GPU.
  void *data(int device, int variable) const {
    return storage_[device][variable].data();
  }
  /// The variable as floats on `device` (f32 variables in host memory
  /// only; use read() for a placed copy).
  const float *f32(int device, int variable) const {
    return reinterpret_cast<const float *>(data(device, variable));
  }
  /// The variable's Keras shape. A variable stored in another layout (a
  /// conv kernel stored OHWI: plan.fbs' logical_permutation) is converted
  /// by initialize(), read(), readCopy() and write(), so everything outside
  /// the devices sees Keras' layout; data() is the stored layout.
  const std::vector<int64_t> &shape(int variable) const {
    return shapes_[variable];
  }
  /// The index of the variable named `name`, or -1.
  int find(const std::string &name) const;
  /// Copies the variable's value (device 0's copy; all copies are equal
  /// between steps) to `bytes(variable)` bytes at `dst`. Checkpoints and
  /// --save-weights read variables only through here, so a backend whose
  /// variables live in device memory changes only read() and write().
  Status read(int variable, void *dst) const;
  /// Device `device`'s copy (tests compare the mirrors through it).
  Status readCopy(int device, int variable, void *dst) const;
  /// Sets every device's copy of the variable from `src`.
  Status write(int variable, const void *src);

private:
  std::vector<std::string> names_;
  std::vector<int64_t> bytes_;
  std::vector<std::vector<int64_t>> shapes_;
  /// Per variable: stored axis i is Keras axis permutation[i]; empty when
  /// stored as Keras lays it out.
  std::vector<std::vector<int>> permutations_;
  std::vector<std::vector<DeviceMemory>> storage_; // [device][variable]
  std::shared_ptr<DeviceSet> placement_;
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_MIRROREDVARIABLES_H
