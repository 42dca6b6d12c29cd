#pragma once
// The RAII owner of one HDF5 identifier, shared by the io area's HDF5 code.

#include <hdf5.h>

namespace kotml::io::h5::detail {

/// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = -1;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

}  // namespace kotml::io::h5::detail
