// The GPU engine of the grid: each MPI rank's GPU runs the arithmetic of a grid job with NVIDIA's
// distributed libraries (cuBLASMp's GEMM, cuSOLVERMp's LU) over one NCCL communicator of every
// rank, on the block-cyclic parts the grid has already scattered over MPI (ScalapackGrid keeps the
// header, scatter and gather for both engines). Nothing here names CUDA, NCCL or MPI: the engine
// is built into a plugin (libmatrixd_mp_grid.so, core/distributed/nvidia_mp_grid.cc) that the
// binary loads at start-up, so that matrixd starts on machines without the NVIDIA MP libraries.
//
// Every method of DeviceGridEngine is collective over the communicator: all ranks call it in the
// same order with the same layouts. Parts are column-major with the leading dimension
// BlockCyclicLayout::LocalLeadingDimension, as ScaLAPACK's local arrays. The process grid is the
// same row-major one as BLACS's "Row" order (rank r at (r / cols, r % cols)), which is cuBLASMp's
// CUBLASMP_GRID_LAYOUT_ROW_MAJOR and cuSOLVERMp's CUSOLVERMP_GRID_MAPPING_ROW_MAJOR, so a part
// scattered for ScaLAPACK is the part the libraries expect.
#ifndef MATRIXD_CORE_DISTRIBUTED_DEVICE_GRID_ENGINE_H_
#define MATRIXD_CORE_DISTRIBUTED_DEVICE_GRID_ENGINE_H_

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/distributed/block_cyclic.h"

namespace matrixd::distributed {

// det(A) = sign * exp(log_abs); sign 0 and log_abs -inf for a singular matrix.
struct SignedLogDeterminant {
  int sign = 0;
  double log_abs = 0.0;
};

class DeviceGridEngine {
 public:
  virtual ~DeviceGridEngine() = default;

  // The GPU this rank uses, e.g. "GPU 0 (NVIDIA H100 80GB HBM3)".
  virtual std::string device() const = 0;

  // This rank's part of C = A B (C's layout: a.rows x b.cols, a's block and grid) from its parts
  // of A and B. REQUIRES: a.cols == b.rows, same block and grid. RESOURCE_EXHAUSTED when the
  // parts do not fit the GPU; INTERNAL/UNAVAILABLE naming the failed CUDA, NCCL or cuBLASMp call.
  virtual absl::StatusOr<std::vector<double>> Multiply(const BlockCyclicLayout& a,
                                                       const BlockCyclicLayout& b,
                                                       const std::vector<double>& local_a,
                                                       const std::vector<double>& local_b) = 0;

  // det(A) of a square A from this rank's part (LU with partial pivoting by cuSOLVERMp; the
  // diagonal and pivots reduced on the GPUs), the same on every rank. Errors as Multiply.
  virtual absl::StatusOr<SignedLogDeterminant> Determinant(const BlockCyclicLayout& a,
                                                           const std::vector<double>& local_a) = 0;
};

// The bytes of an NCCL unique id (NCCL_UNIQUE_ID_BYTES), which the root makes and broadcasts.
inline constexpr size_t kCommunicatorIdBytes = 128;
using CommunicatorId = std::array<std::byte, kCommunicatorIdBytes>;

// What the plugin exports (one object, from its extern "C" matrixd_device_grid_plugin()).
class DeviceGridPlugin {
 public:
  virtual ~DeviceGridPlugin() = default;
  // CUDA devices visible to this process (0 when there are none or no driver).
  virtual int DeviceCount() const = 0;
  // A fresh communicator id (ncclGetUniqueId); called on the root only.
  virtual absl::StatusOr<CommunicatorId> NewCommunicatorId() const = 0;
  // Makes `device` this process's GPU and joins communicator `id` as `rank` of `ranks` (blocks
  // until every rank has joined). Collective.
  virtual absl::StatusOr<std::unique_ptr<DeviceGridEngine>> Join(const CommunicatorId& id,
                                                                 int ranks, int rank,
                                                                 int device) const = 0;
};

// Loads the plugin (next to the running binary, else by name through the library path) once per
// process; later calls return the same object or error. UNIMPLEMENTED when this build has no
// cuBLASMp/cuSOLVERMp (the wheels were not found at build time); FAILED_PRECONDITION with the
// loader's message when the plugin or a library it needs (cuBLASMp, cuSOLVERMp, NCCL >= 2.29.2,
// the CUDA driver) cannot be loaded.
absl::StatusOr<const DeviceGridPlugin*> LoadDeviceGridPlugin();

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_DEVICE_GRID_ENGINE_H_
