// The shared-filesystem check, as functions of paths so it is unit-tested without
// a cluster: every rank writes <dir>/<rank>.token (a random token, its host, and a
// checksum of both); after a barrier each rank reads the file a rank on another node
// wrote. When the results directory is node-local (or a stale NFS cache hides the
// file), the reader cannot see it or sees other bytes, and the record names both nodes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "results/record.h"

namespace gpuaccept::smoke {

struct FsToken {
  int rank = 0;
  std::string host;
  std::uint64_t token = 0;
};

std::uint64_t fnv1a64(std::string_view data);
std::filesystem::path token_path(const std::filesystem::path& dir, int rank);
// The file's text: "rank=..\nhost=..\ntoken=0x..\nchecksum=0x..\n" (FNV-1a of the lines above it).
std::string encode_token_file(const FsToken& t);

// Writes the token file (fsync'd, so another node can see it after the barrier);
// returns "" on success, else the error ("<path>: Permission denied").
std::string write_token_file(const std::filesystem::path& dir, const FsToken& t);

struct TokenCheck {
  Status status = Status::Pass;
  std::string message;
};
// Reads `path`, which `expected.host` wrote, from `reader_host`.
TokenCheck verify_token_file(const std::filesystem::path& path, const FsToken& expected,
                             const std::string& reader_host);

// Whose file `rank` reads: the rank with the same local index on the next node,
// else the first rank of the next node; -1 when all ranks are on one node.
int fs_peer_rank(int rank, const std::vector<int>& rank_nodes);

}  // namespace gpuaccept::smoke
