// RAII owners for HDF5 identifiers and the HDF5 leg of the one error path.
#pragma once

#include <source_location>
#include <string>
#include <utility>

#include <hdf5.h>

namespace gpuaccept {

// The innermost message on HDF5's error stack ("unable to open file", ...).
std::string hdf5_error_text();

// HDF5 calls return a negative value on failure.
hid_t hdf5_check(hid_t rc, const char* call, const std::source_location& loc = std::source_location::current());
#define GPUACCEPT_HDF5_CHECK(call) ::gpuaccept::hdf5_check((call), #call)

// Turns off HDF5's own printing of its error stack: failures reach the user once,
// through CallError/InputError, with the file name.
void hdf5_quiet();

class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Closer close) : id_(id), close_(close) {}
  H5Id(H5Id&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  H5Id& operator=(H5Id&& o) noexcept {
    reset();
    id_ = std::exchange(o.id_, H5I_INVALID_HID);
    close_ = o.close_;
    return *this;
  }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  ~H5Id() { reset(); }
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

inline H5Id h5_file(hid_t id) { return {id, H5Fclose}; }
inline H5Id h5_group(hid_t id) { return {id, H5Gclose}; }
inline H5Id h5_dataset(hid_t id) { return {id, H5Dclose}; }
inline H5Id h5_space(hid_t id) { return {id, H5Sclose}; }
inline H5Id h5_type(hid_t id) { return {id, H5Tclose}; }
inline H5Id h5_attr(hid_t id) { return {id, H5Aclose}; }
inline H5Id h5_plist(hid_t id) { return {id, H5Pclose}; }

// A variable-length UTF-8 string type.
H5Id h5_string_type();

}  // namespace gpuaccept
