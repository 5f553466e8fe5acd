//===- Hdf5.h - libhdf5 handles, quiet errors -------------------*- C++ -*-===//
//
// What the reader and the writer of Keras' weights files share around
// libhdf5's C API: identifiers closed by scope, and a scope in which HDF5
// prints nothing (its errors come back in a Status) and loads no filter
// plugins. libhdf5 is not thread-safe: one file at a time per process.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_HDF5_H
#define RUNTIME_CHECKPOINT_HDF5_H

#include <hdf5.h>

#include <string>
#include <utility>

namespace graph::runtime::checkpoint {

/// An HDF5 identifier, closed when it goes out of scope.
class Hid {
public:
  using Close = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Close close) : id_(id), close_(close) {}
  Hid(Hid &&other) noexcept
      : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Hid &operator=(Hid &&other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Hid(const Hid &) = delete;
  Hid &operator=(const Hid &) = delete;
  ~Hid() { reset(); }

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }

private:
  void reset() {
    if (id_ >= 0 && close_)
      close_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  Close close_ = nullptr;
};

/// For its lifetime HDF5 prints no errors (they come back in a Status) and
/// loads no filter plugins (a file could name any library on the plugin
/// path); both settings are restored after.
class Hdf5Quiet {
public:
  Hdf5Quiet() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    H5PLget_loading_state(&plugins_);
    H5PLset_loading_state(0);
  }
  ~Hdf5Quiet() {
    H5Eclear2(H5E_DEFAULT);
    H5PLset_loading_state(plugins_);
    H5Eset_auto2(H5E_DEFAULT, func_, data_);
  }
  Hdf5Quiet(const Hdf5Quiet &) = delete;
  Hdf5Quiet &operator=(const Hdf5Quiet &) = delete;

private:
  H5E_auto2_t func_ = nullptr;
  void *data_ = nullptr;
  unsigned plugins_ = 0;
};

/// The most specific message on HDF5's error stack (where the library
/// found the fault: "truncated file: eof = ..."), or "" when the stack is
/// empty; clears the stack. HDF5 clears it on entry to every API call, so
/// it holds only the last failed call's messages.
inline std::string hdf5Detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t *error, void *out) -> herr_t {
        if (n == 0 && error->desc)
          *static_cast<std::string *>(out) = error->desc;
        return 0;
      },
      &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_HDF5_H
