// A Backend on rank 0 of an `mpirun` that runs the large float64 dense jobs over every rank's
// ScaLAPACK grid and the rest on its local backend: Multiply (pdgemm), Determinant by LU and
// Factorize LU with an optional solve (pdgetrf, pdgetrs). One grid job at a time (the grid is one
// communicator); the others wait for it. A grid job that fails with an MPI error, or that has not
// finished after `timeout` (a rank died and left the others blocked), fails with UNAVAILABLE; the
// grid is then given up for good (lost() is set) and every later job runs on the local backend.
#ifndef MATRIXD_CORE_DISTRIBUTED_DISTRIBUTED_BACKEND_H_
#define MATRIXD_CORE_DISTRIBUTED_DISTRIBUTED_BACKEND_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "core/backend.h"
#include "core/distributed/scalapack_grid.h"

namespace matrixd::distributed {

struct DistributedBackendOptions {
  // Operands whose largest dimension is below this run on the local backend.
  int64_t min_dimension = 1024;
  // A grid job not finished by then fails with UNAVAILABLE and the grid is given up.
  absl::Duration timeout = absl::Minutes(30);
  // Set when the grid is given up (shared with MpiSession, which then skips MPI_Finalize).
  std::shared_ptr<std::atomic<bool>> lost = std::make_shared<std::atomic<bool>>(false);
};

// REQUIRES: grid is the root's (rank 0); the other ranks are in ScalapackGrid::ServeWorker.
// Destroying the backend sends them kShutdown when the grid is still whole.
std::unique_ptr<Backend> MakeDistributedBackend(std::unique_ptr<Backend> local,
                                                std::unique_ptr<ScalapackGrid> grid,
                                                const DistributedBackendOptions& options);

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_DISTRIBUTED_BACKEND_H_
