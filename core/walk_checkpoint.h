// A file that records the finished chunks of a long walk (a permanent's Gray-code range) with
// their partial sums, so that a job restarted after a crash or a lost node resumes where it
// stopped instead of starting over (SUperman's multi-day runs). The partial sums are stored
// bit for bit and combined in chunk order as before, so a resumed walk gives exactly the value
// of an uninterrupted one.
//
// Records are appended with write(2) as chunks finish (they survive the process being killed)
// and synced to disk at most once a second (a power loss may forget the last second).
#ifndef MATRIXD_CORE_WALK_CHECKPOINT_H_
#define MATRIXD_CORE_WALK_CHECKPOINT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/matrix.h"

namespace matrixd {

// What identifies a walk: the operand's dtype, shape and bytes, and the walk's own parameters
// (method, chunking), hashed. REQUIRES: a host view.
uint64_t WalkKey(const MatrixView& a, std::span<const int64_t> parameters);

class WalkCheckpoint {
 public:
  // Opens `dir`/walk-<key>.ckpt for a walk of `chunks` chunks whose partial sums have `sum_bytes`
  // bytes each, creating `dir` and the file when missing; reads the chunks already recorded. A
  // file written for another walk shape is started afresh. Errors of the file system (naming the
  // path) otherwise.
  static absl::StatusOr<std::unique_ptr<WalkCheckpoint>> Open(const std::string& dir, uint64_t key,
                                                              int64_t chunks, size_t sum_bytes);
  ~WalkCheckpoint();
  WalkCheckpoint(const WalkCheckpoint&) = delete;
  WalkCheckpoint& operator=(const WalkCheckpoint&) = delete;

  const std::string& path() const { return path_; }
  // Chunks found recorded when the file was opened.
  int64_t resumed_chunks() const { return resumed_; }
  // Whether `chunk` was recorded when the file was opened; then Load gives its partial sum.
  bool done(int64_t chunk) const { return done_[static_cast<size_t>(chunk)] != 0; }
  void Load(int64_t chunk, std::span<std::byte> sum) const;
  // Appends chunk's partial sum (sum_bytes bytes). Thread-safe.
  absl::Status Record(int64_t chunk, std::span<const std::byte> sum);
  // Deletes the file: the walk is complete and its result delivered.
  void Remove();

 private:
  WalkCheckpoint(std::string path, int fd, int64_t chunks, size_t sum_bytes);

  const std::string path_;
  const int fd_;
  const size_t sum_bytes_;
  std::vector<char> done_;
  std::vector<std::byte> sums_;
  int64_t resumed_ = 0;
  absl::Mutex mutex_;
  int64_t last_sync_ns_ = 0;  // guarded by mutex_
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_WALK_CHECKPOINT_H_
