// HDF5 layout (docs/results-format.md):
//   /                 attributes: gpuaccept_format (int) and string attributes
//   /records          1-D compound dataset, one element per Record
//   /documents/<name> 1-D variable-length string dataset, element r = rank r's JSON
#include "results/result_file.h"

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <system_error>

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/error.h"
#include "results/hdf5_handle.h"
#include "results/record_bounds.h"

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {

// The in-memory row HDF5 converts to and from; strings are variable-length.
struct RecordRow {
  const char* phase;
  const char* job_id;
  const char* array_job_id;
  const char* array_task_id;
  std::int32_t rank;
  const char* node;
  std::int32_t gpu_index;
  const char* gpu_uuid;
  const char* test;
  const char* metric;
  double value;
  const char* unit;
  const char* params;
  const char* status;
  const char* message;
};

H5Id record_type() {
  H5Id str = h5_string_type();
  H5Id t = h5_type(GPUACCEPT_HDF5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(RecordRow))));
  auto add = [&](const char* name, std::size_t offset, hid_t type) {
    GPUACCEPT_HDF5_CHECK(H5Tinsert(t, name, offset, type));
  };
  add("phase", offsetof(RecordRow, phase), str);
  add("job_id", offsetof(RecordRow, job_id), str);
  add("array_job_id", offsetof(RecordRow, array_job_id), str);
  add("array_task_id", offsetof(RecordRow, array_task_id), str);
  add("rank", offsetof(RecordRow, rank), H5T_NATIVE_INT32);
  add("node", offsetof(RecordRow, node), str);
  add("gpu_index", offsetof(RecordRow, gpu_index), H5T_NATIVE_INT32);
  add("gpu_uuid", offsetof(RecordRow, gpu_uuid), str);
  add("test", offsetof(RecordRow, test), str);
  add("metric", offsetof(RecordRow, metric), str);
  add("value", offsetof(RecordRow, value), H5T_NATIVE_DOUBLE);
  add("unit", offsetof(RecordRow, unit), str);
  add("params", offsetof(RecordRow, params), str);
  add("status", offsetof(RecordRow, status), str);
  add("message", offsetof(RecordRow, message), str);
  return t;
}

void write_string_attr(hid_t obj, const std::string& name, const std::string& value) {
  H5Id type = h5_string_type();
  H5Id space = h5_space(GPUACCEPT_HDF5_CHECK(H5Screate(H5S_SCALAR)));
  H5Id attr = h5_attr(GPUACCEPT_HDF5_CHECK(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT)));
  const char* p = value.c_str();
  GPUACCEPT_HDF5_CHECK(H5Awrite(attr, type, &p));
}

void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& values) {
  H5Id type = h5_string_type();
  const hsize_t n = values.size();
  H5Id space = h5_space(GPUACCEPT_HDF5_CHECK(H5Screate_simple(1, &n, nullptr)));
  H5Id ds = h5_dataset(
      GPUACCEPT_HDF5_CHECK(H5Dcreate2(parent, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  if (n > 0) GPUACCEPT_HDF5_CHECK(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()));
}

void write_records(hid_t file, const std::vector<Record>& records) {
  std::vector<std::string> keep;  // owns the encoded params while HDF5 reads the rows
  keep.reserve(records.size());
  std::vector<RecordRow> rows;
  rows.reserve(records.size());
  for (const auto& r : records) {
    keep.push_back(encode_params(r.params));
    rows.push_back({r.phase.c_str(), r.job_id.c_str(), r.array_job_id.c_str(), r.array_task_id.c_str(), r.rank,
                    r.node.c_str(), r.gpu_index, r.gpu_uuid.c_str(), r.test.c_str(), r.metric.c_str(), r.value,
                    r.unit.c_str(), keep.back().c_str(), to_string(r.status).data(), r.message.c_str()});
  }
  H5Id type = record_type();
  const hsize_t n = rows.size();
  H5Id space = h5_space(GPUACCEPT_HDF5_CHECK(H5Screate_simple(1, &n, nullptr)));
  H5Id ds = h5_dataset(
      GPUACCEPT_HDF5_CHECK(H5Dcreate2(file, "records", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  if (n > 0) GPUACCEPT_HDF5_CHECK(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()));
}

void write_hdf5(const fs::path& path, const ResultFile& file) {
  hdf5_quiet();
  H5Id f = h5_file(GPUACCEPT_HDF5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT)));
  {
    H5Id space = h5_space(GPUACCEPT_HDF5_CHECK(H5Screate(H5S_SCALAR)));
    H5Id attr = h5_attr(
        GPUACCEPT_HDF5_CHECK(H5Acreate2(f, "gpuaccept_format", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT)));
    const int version = kResultsFormatVersion;
    GPUACCEPT_HDF5_CHECK(H5Awrite(attr, H5T_NATIVE_INT, &version));
  }
  for (const auto& [k, v] : file.attributes) write_string_attr(f, k, v);
  write_records(f, file.records);
  H5Id docs = h5_group(GPUACCEPT_HDF5_CHECK(H5Gcreate2(f, "documents", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  for (const auto& [name, per_rank] : file.documents) write_strings(docs, name, per_rank);
  GPUACCEPT_HDF5_CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
}

void sync_file(const fs::path& path) {
  // The rename below only protects readers if the data reached the disk first.
  // A failed fsync (a full or failing filesystem, NFS's deferred write errors) means the file
  // may not hold what was written: an error, never a results file.
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) raise_call_error("libc", "open", fmt::format("{}: {}", path.string(), errno_text()));
  const int rc = ::fsync(fd);
  const std::string why = rc != 0 ? errno_text() : std::string();
  ::close(fd);
  if (rc != 0) raise_call_error("libc", "fsync", fmt::format("{}: {}", path.string(), why));
}

// --- reading ---------------------------------------------------------------

std::string read_string_attr(hid_t obj, const char* name) {
  H5Id attr = h5_attr(GPUACCEPT_HDF5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  H5Id ftype = h5_type(GPUACCEPT_HDF5_CHECK(H5Aget_type(attr)));
  if (H5Tget_class(ftype) != H5T_STRING) return {};
  if (H5Tis_variable_str(ftype) > 0) {
    H5Id type = h5_string_type();
    char* p = nullptr;
    GPUACCEPT_HDF5_CHECK(H5Aread(attr, type, &p));
    std::string out = p ? p : "";
    H5free_memory(p);
    return out;
  }
  std::string out(H5Tget_size(ftype), '\0');
  GPUACCEPT_HDF5_CHECK(H5Aread(attr, ftype, out.data()));
  return out.substr(0, out.find('\0'));
}

// H5Aiterate2 and H5Literate call back through libhdf5's C frames, which an exception must
// never cross: unwinding past them skips the library's own cleanup and leaves it holding a
// freed file (the process then crashed at exit, in H5_term_library). So each callback catches,
// keeps the exception here, stops the iteration with -1, and the caller rethrows it after.
template <typename Out>
struct IterationState {
  Out* out;
  std::exception_ptr error;
};

template <typename Out>
void rethrow_iteration_error(const IterationState<Out>& state) {
  if (state.error) std::rethrow_exception(state.error);
}

herr_t collect_attr(hid_t obj, const char* name, const H5A_info_t*, void* data) {
  auto* state = static_cast<IterationState<std::map<std::string, std::string>>*>(data);
  try {
    if (std::strcmp(name, "gpuaccept_format") != 0) (*state->out)[name] = read_string_attr(obj, name);
    return 0;
  } catch (...) {
    state->error = std::current_exception();
    return -1;
  }
}

// The number of elements of dataset `ds` (named `what` in the error), checked before anything
// is allocated for them. A damaged dataspace can claim any count (fuzzing found 2^32 records
// in a 50 kB file, and a document of 2^55 strings: the allocations alone asked for 257 GB and
// more). Every element takes at least its datatype's size in the file (our datasets are
// contiguous and uncompressed; a variable-length string, a pointer's size here and a heap
// reference there), so the file's size bounds the count.
std::size_t element_count_within_file(hid_t ds, hid_t space, const std::string& what, const char* elements) {
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  H5Id file = h5_file(GPUACCEPT_HDF5_CHECK(H5Iget_file_id(ds)));
  hsize_t file_bytes = 0;
  GPUACCEPT_HDF5_CHECK(H5Fget_filesize(file, &file_bytes));
  const H5Id disk_type = h5_type(GPUACCEPT_HDF5_CHECK(H5Dget_type(ds)));
  const std::size_t element_bytes = H5Tget_size(disk_type);
  if (n < 0 || element_bytes == 0 || static_cast<hsize_t>(n) > file_bytes / element_bytes)
    raise_call_error("HDF5", what,
                     fmt::format("the dataset claims {} {} of {} bytes, more than the file's {} bytes can hold "
                                 "(damaged)",
                                 n, elements, element_bytes, file_bytes));
  return static_cast<std::size_t>(n);
}

std::vector<Record> read_records(hid_t file) {
  H5Id ds = h5_dataset(GPUACCEPT_HDF5_CHECK(H5Dopen2(file, "records", H5P_DEFAULT)));
  H5Id space = h5_space(GPUACCEPT_HDF5_CHECK(H5Dget_space(ds)));
  const std::size_t n = element_count_within_file(ds, space, "records", "records");
  std::vector<RecordRow> rows(n);
  if (n == 0) return {};
  H5Id type = record_type();
  GPUACCEPT_HDF5_CHECK(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()));
  auto s = [](const char* p) { return std::string(p ? p : ""); };
  std::vector<Record> out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    Record r;
    r.phase = s(row.phase);
    r.job_id = s(row.job_id);
    r.array_job_id = s(row.array_job_id);
    r.array_task_id = s(row.array_task_id);
    r.rank = row.rank;
    r.node = s(row.node);
    r.gpu_index = row.gpu_index;
    r.gpu_uuid = s(row.gpu_uuid);
    r.test = s(row.test);
    r.metric = s(row.metric);
    r.value = row.value;
    r.unit = s(row.unit);
    r.params = decode_params(s(row.params));
    r.status = parse_status(s(row.status));
    r.message = s(row.message);
    out.push_back(std::move(r));
  }
  H5Dvlen_reclaim(type, space, H5P_DEFAULT, rows.data());
  return out;
}

std::vector<std::string> read_strings(hid_t parent, const char* name) {
  H5Id ds = h5_dataset(GPUACCEPT_HDF5_CHECK(H5Dopen2(parent, name, H5P_DEFAULT)));
  H5Id space = h5_space(GPUACCEPT_HDF5_CHECK(H5Dget_space(ds)));
  const std::size_t n = element_count_within_file(ds, space, fmt::format("documents/{}", name), "strings");
  if (n == 0) return {};
  H5Id type = h5_string_type();
  std::vector<char*> ptrs(n, nullptr);
  GPUACCEPT_HDF5_CHECK(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()));
  std::vector<std::string> out;
  for (char* p : ptrs) out.emplace_back(p ? p : "");
  H5Dvlen_reclaim(type, space, H5P_DEFAULT, ptrs.data());
  return out;
}

herr_t collect_document(hid_t group, const char* name, const H5L_info_t*, void* data) {
  auto* state = static_cast<IterationState<std::map<std::string, std::vector<std::string>>>*>(data);
  try {
    (*state->out)[name] = read_strings(group, name);
    return 0;
  } catch (...) {
    state->error = std::current_exception();
    return -1;
  }
}

}  // namespace

fs::path write_result_file(const fs::path& path, const ResultFile& file) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const fs::path tmp = dir / fmt::format(".{}.tmp.{}", path.filename().string(), ::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);  // a leftover of an earlier process with this pid; on a read-only root the write says why
  // Whatever fails (a full or read-only filesystem: the write, the fsync or the link), the
  // temporary goes: no half-written file is left, under its name or any other.
  try {
    write_hdf5(tmp, file);
    sync_file(tmp);
    // link() refuses to replace an existing file, which rename() would do silently.
    for (int n = 1;; ++n) {
      const fs::path target =
          n == 1 ? path : dir / fmt::format("{}-{}{}", path.stem().string(), n, path.extension().string());
      if (::link(tmp.c_str(), target.c_str()) == 0) {
        ::unlink(tmp.c_str());
        return target;
      }
      if (errno != EEXIST)
        raise_call_error("libc", "link", fmt::format("{} -> {}: {}", tmp.string(), target.string(), errno_text()));
    }
  } catch (const std::exception& e) {
    const int err = errno;  // what the failed write(), fsync() or link() said
    fs::remove(tmp, ec);
    // A filesystem that is full, read-only or failing: say so in a line, not in libhdf5's words.
    if (err == ENOSPC || err == EDQUOT || err == EROFS || err == EIO || err == EFBIG || err == EACCES)
      throw std::runtime_error(fmt::format("cannot write results file {}: {} (nothing was written)", path.string(),
                                           std::strerror(err)));
    throw;
  }
}

ResultFile read_result_file(const fs::path& path) {
  hdf5_quiet();
  if (!fs::exists(path)) throw InputError(fmt::format("results file {}: does not exist", path.string()));
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw InputError(fmt::format("results file {}: not an HDF5 file (empty, truncated or another format)", path.string()));
  ResultFile out;
  try {
    H5Id f = h5_file(GPUACCEPT_HDF5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)));
    if (H5Aexists(f, "gpuaccept_format") <= 0)
      throw InputError(fmt::format("results file {}: an HDF5 file, but not one gpuaccept wrote (no 'gpuaccept_format' attribute)", path.string()));
    int version = 0;
    {
      H5Id attr = h5_attr(GPUACCEPT_HDF5_CHECK(H5Aopen(f, "gpuaccept_format", H5P_DEFAULT)));
      GPUACCEPT_HDF5_CHECK(H5Aread(attr, H5T_NATIVE_INT, &version));
    }
    if (version != kResultsFormatVersion)
      throw InputError(fmt::format("results file {}: format version {}, this build reads {}", path.string(), version,
                                   kResultsFormatVersion));
    IterationState<std::map<std::string, std::string>> attrs{&out.attributes, nullptr};
    hsize_t idx = 0;
    const herr_t attrs_status = H5Aiterate2(f, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &attrs);
    rethrow_iteration_error(attrs);
    GPUACCEPT_HDF5_CHECK(attrs_status);
    out.records = read_records(f);
    check_record_bounds(path, out.records);
    if (H5Lexists(f, "documents", H5P_DEFAULT) > 0) {
      H5Id docs = h5_group(GPUACCEPT_HDF5_CHECK(H5Gopen2(f, "documents", H5P_DEFAULT)));
      IterationState<std::map<std::string, std::vector<std::string>>> documents{&out.documents, nullptr};
      const herr_t documents_status = H5Literate(docs, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_document, &documents);
      rethrow_iteration_error(documents);
      GPUACCEPT_HDF5_CHECK(documents_status);
    }
  } catch (const CallError& e) {
    throw InputError(fmt::format("results file {}: unreadable ({}: {})", path.string(), e.call(), e.detail()));
  }
  return out;
}

}  // namespace gpuaccept
