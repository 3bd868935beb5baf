// Which engine the grid's ranks run products and determinants with, decided once at start-up and
// the same on every rank: ScaLAPACK on the CPU, or cuBLASMp/cuSOLVERMp on one GPU per rank
// (device_grid_engine.h). Factorize always runs ScaLAPACK (the GPU engine returns no factors).
#ifndef MATRIXD_CORE_DISTRIBUTED_GRID_ENGINE_CHOICE_H_
#define MATRIXD_CORE_DISTRIBUTED_GRID_ENGINE_CHOICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/distributed/scalapack_grid.h"

namespace matrixd::distributed {

enum class GridEngineKind {
  kAuto,       // the GPUs when every rank can use one, else ScaLAPACK
  kScalapack,  // ScaLAPACK only
  kNvidiaMp,   // the GPUs, or no start
};

// "auto", "scalapack" or "nvidia_mp"; INVALID_ARGUMENT naming the value otherwise.
absl::StatusOr<GridEngineKind> ParseGridEngine(absl::string_view name);

// Collective over MPI_COMM_WORLD. Each rank checks that it can run the GPU engine: `wanted` is
// not kScalapack, `cuda_backend` (the server runs the CUDA backend), the plugin loads, and a CUDA
// device exists for its local rank (its rank among the ranks of its node,
// MPI_COMM_TYPE_SHARED; the device ordinal is that local rank). When every rank can, rank 0
// makes an NCCL id and broadcasts it, every rank joins one communicator (NCCL rank = MPI rank,
// so the process grids coincide) and grid.SetDeviceEngine. Returns the same line on every rank
// saying which engine runs and, for ScaLAPACK, why (the first rank that could not, and its
// reason). FAILED_PRECONDITION with that reason when `wanted` is kNvidiaMp and some rank cannot;
// UNAVAILABLE for MPI errors.
absl::StatusOr<std::string> ChooseGridEngine(GridEngineKind wanted, bool cuda_backend,
                                             ScalapackGrid& grid);

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_GRID_ENGINE_CHOICE_H_
