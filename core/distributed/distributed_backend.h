// A Backend on rank 0 of an `mpirun` that runs the large float64 dense jobs over every rank's
// grid and the rest on its local backend: Multiply (pdgemm, or cuBLASMp when the grid has its GPU
// engine), Determinant by LU (pdgetrf, or cuSOLVERMp) and Factorize LU with an optional solve
// (pdgetrf, pdgetrs; always ScaLAPACK). Multiply with method kCublasMp runs on the GPU engine
// whatever its size, and is UNIMPLEMENTED (saying why) on a grid without one; Multiply with
// devices > 1 or method kCannon stays on the local backend (its GPUs). Grid jobs read host bytes
// (a resident operand is copied to the host first). One grid job at a time (the grid is one
// communicator); the others wait for it. A grid job that fails with an MPI error, or that has not
// finished after `timeout` (a rank died and left the others blocked), fails with UNAVAILABLE; the
// grid is then given up for good (lost() is set) and every later job runs on the local backend.
#ifndef MATRIXD_CORE_DISTRIBUTED_DISTRIBUTED_BACKEND_H_
#define MATRIXD_CORE_DISTRIBUTED_DISTRIBUTED_BACKEND_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

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
  // The block of the GPU engine's layout; 0: 1024 for products, 512 for LUs (matrixd_mp_bench's
  // defaults). ScaLAPACK jobs use the grid's block().
  int64_t device_block = 0;
  // What ChooseGridEngine said (grid_engine_choice.h): why a grid without the GPU engine has none,
  // for the answer to method kCublasMp.
  std::string engine_note{};
};

// REQUIRES: grid is the root's (rank 0); the other ranks are in ScalapackGrid::ServeWorker.
// Destroying the backend sends them kShutdown when the grid is still whole.
std::unique_ptr<Backend> MakeDistributedBackend(std::unique_ptr<Backend> local,
                                                std::unique_ptr<ScalapackGrid> grid,
                                                const DistributedBackendOptions& options);

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_DISTRIBUTED_BACKEND_H_
