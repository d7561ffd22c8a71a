// A plain-text table of records for the job log, so an operator (or
// tests/gpu/smoke_local.sh) sees the outcome without opening the HDF5 file.
#pragma once

#include <string>
#include <vector>

#include "results/record.h"

namespace gpuaccept::smoke {

// One line per record: status, test, the distinguishing params, value and unit, message
// (cut to `message_width` characters; 0: whole).
std::string format_records_table(const std::vector<Record>& records, std::size_t message_width = 110);

}  // namespace gpuaccept::smoke
