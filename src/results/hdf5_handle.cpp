#include "results/hdf5_handle.h"

#include "common/error.h"

namespace gpuaccept {

namespace {
herr_t innermost(unsigned n, const H5E_error2_t* err, void* out) {
  if (n == 0 && err->desc) *static_cast<std::string*>(out) = err->desc;
  return 0;
}
}  // namespace

std::string hdf5_error_text() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &text);
  return text.empty() ? "no detail on the HDF5 error stack" : text;
}

hid_t hdf5_check(hid_t rc, const char* call, const std::source_location& loc) {
  if (rc < 0) raise_call_error("HDF5", call, hdf5_error_text(), loc);
  return rc;
}

void hdf5_quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

H5Id h5_string_type() {
  H5Id t = h5_type(GPUACCEPT_HDF5_CHECK(H5Tcopy(H5T_C_S1)));
  GPUACCEPT_HDF5_CHECK(H5Tset_size(t, H5T_VARIABLE));
  GPUACCEPT_HDF5_CHECK(H5Tset_cset(t, H5T_CSET_UTF8));
  return t;
}

}  // namespace gpuaccept
