// MPI for the life of a process: MPI_Init_thread (MPI_THREAD_SERIALIZED: one thread calls MPI at a
// time) on creation and MPI_Finalize on destruction, unless the grid was lost (a rank died, a
// job timed out): then MPI_Finalize would wait for the lost rank, and the process ends without it.
#ifndef MATRIXD_CORE_DISTRIBUTED_MPI_SESSION_H_
#define MATRIXD_CORE_DISTRIBUTED_MPI_SESSION_H_

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"

namespace matrixd::distributed {

class MpiSession {
 public:
  // FAILED_PRECONDITION when MPI cannot start or gives less than MPI_THREAD_SERIALIZED.
  static absl::StatusOr<std::unique_ptr<MpiSession>> Init(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Collective: the root's `ready` on every rank (the others' argument is ignored), so that the
  // workers stop when the root cannot start. UNAVAILABLE for MPI errors.
  absl::StatusOr<bool> RootReady(bool ready);
  // Set by whoever finds the grid broken; read by the destructor.
  const std::shared_ptr<std::atomic<bool>>& lost() const { return lost_; }

 private:
  MpiSession(int rank, int size) : rank_(rank), size_(size) {}

  int rank_;
  int size_;
  std::shared_ptr<std::atomic<bool>> lost_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_MPI_SESSION_H_
