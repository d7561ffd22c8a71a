// An owned file descriptor: closed when its owner goes, so that no early return or
// exception leaks one (the report opens a pipe for every results file it reads).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "common/error.h"

namespace gpuaccept {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read, write;
};

// Close-on-exec, so that a program this process starts later does not hold a write end
// open and keep the reader from ever seeing end-of-file.
inline Pipe make_pipe() {
  int fds[2];
  GPUACCEPT_CHECK_ERRNO(::pipe2(fds, O_CLOEXEC));
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace gpuaccept
