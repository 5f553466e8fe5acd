//===- Device.cpp - host devices and the device-platform registry --------===//
//
// The host backends' devices (memory from Arena, programs run by the
// executor's own threads) and the registry through which other backends
// (CUDA) offer theirs, so runtime/core never includes a CUDA header.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Device.h"

#include "runtime/core/Arena.h"

#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace graph::runtime {

Status allocateHostMemory(int64_t bytes, DeviceMemory &out) {
  Arena arena;
  if (Status s = Arena::allocate(bytes, arena); !s)
    return s;
  auto *owner = new Arena(std::move(arena));
  out = DeviceMemory(owner->data(), bytes, [owner](void *) { delete owner; });
  return Status::ok();
}

bool isHostBackend(Backend backend) {
  return backend == Backend::reference || backend == Backend::cpu;
}

namespace {

/// A host replica: memory from Arena; kernels get no device state.
struct HostDevice final : Device {
  explicit HostDevice(int index) : index(index) {}
  std::string name() const override { return "host:" + std::to_string(index); }
  Status allocate(int64_t bytes, DeviceMemory &out) override {
    return allocateHostMemory(bytes, out);
  }
  Status copyFromHost(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  int index;
};

/// The host backends' devices. Their programs run on the executor's own
/// threads, so createRunner gives no runner.
class HostDeviceSet final : public DeviceSet {
public:
  HostDeviceSet(Backend backend, int devices) : backend_(backend) {
    for (int d = 0; d < devices; ++d)
      devices_.push_back(std::make_unique<HostDevice>(d));
  }
  Backend backend() const override { return backend_; }
  int size() const override { return static_cast<int>(devices_.size()); }
  Device &device(int index) override { return *devices_[index]; }
  Status createRunner(const PreparedProgram &, const ExecutorOptions &,
                      std::unique_ptr<ProgramRunner> &out) override {
    out.reset();
    return Status::ok();
  }

private:
  Backend backend_;
  std::vector<std::unique_ptr<HostDevice>> devices_;
};

std::mutex &platformMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<Backend, DevicePlatform> &platforms() {
  static std::map<Backend, DevicePlatform> registered;
  return registered;
}

} // namespace

void registerDevicePlatform(Backend backend, DevicePlatform platform) {
  std::lock_guard<std::mutex> lock(platformMutex());
  platforms()[backend] = std::move(platform);
}

bool hasDevicePlatform(Backend backend) {
  std::lock_guard<std::mutex> lock(platformMutex());
  return platforms().count(backend) != 0;
}

int physicalDeviceCount(Backend backend) {
  std::function<int()> count;
  {
    std::lock_guard<std::mutex> lock(platformMutex());
    auto it = platforms().find(backend);
    if (it == platforms().end() || !it->second.physicalDevices)
      return 0;
    count = it->second.physicalDevices;
  }
  return count();
}

const char *precisionName(Precision precision) {
  return precision == Precision::tf32 ? "tf32" : "fp32";
}

std::optional<Precision> parsePrecision(const std::string &name) {
  if (name == "fp32")
    return Precision::fp32;
  if (name == "tf32")
    return Precision::tf32;
  return std::nullopt;
}

bool deviceLost() {
  std::vector<std::function<bool()>> checks;
  {
    std::lock_guard<std::mutex> lock(platformMutex());
    for (const auto &[backend, platform] : platforms())
      if (platform.lost)
        checks.push_back(platform.lost);
  }
  for (const auto &lost : checks)
    if (lost())
      return true;
  return false;
}

Status createDeviceSet(Backend backend, int logicalDevices,
                       const ExecutorOptions &options,
                       std::shared_ptr<DeviceSet> &out) {
  DevicePlatform platform;
  {
    std::lock_guard<std::mutex> lock(platformMutex());
    auto it = platforms().find(backend);
    if (it != platforms().end())
      platform = it->second;
  }
  if (isHostBackend(backend)) {
    out = std::make_shared<HostDeviceSet>(backend, logicalDevices);
    return Status::ok();
  }
  if (!platform.createDevices)
    return Status::error(
        std::string("the ") + backendName(backend) +
        " backend's devices are not available: this build has no " +
        backendName(backend) +
        " support, or the tool did not register it (cuda: call "
        "cuda::registerCudaBackend() at start-up); use --backend cpu");
  return platform.createDevices(logicalDevices, options, out);
}

} // namespace graph::runtime
