// A ResultFile as bytes: how a reader process hands what it read to the process that
// asked (isolated_read.h). Length-prefixed and in this machine's byte order (both ends
// are the same program on the same host), so that encoding and decoding cost little next
// to libhdf5's own read: JSON cost 6 times the read itself on a 10,000-record file.
// Every string is made valid UTF-8 on the way (utf8.h): a damaged file can hold any
// bytes, and the report must not pass them on.
#pragma once

#include <string>
#include <string_view>

#include "results/result_file.h"

namespace gpuaccept {

std::string encode_result_file(const ResultFile& file);

// Throws InputError on bytes that encode_result_file did not write (cut short, a bad
// status, a different version).
ResultFile decode_result_file(std::string_view bytes);

}  // namespace gpuaccept
