// The per-GPU state of Cannon's product (cannon_gemm.h): each GPU's NCCL rank of one
// communicator, its two streams, cuBLAS handle, round events and memory resource, and a
// process-wide pool that keeps these sets between products, so that a product on GPUs that ran
// one before pays no communicator set-up (ncclCommInitAll takes ~0.3-0.4 s on two H100s) nor
// handle creation. A set serves one product at a time; a product that failed discards its set
// (its communicator may be broken), one that succeeded gives it back.
#ifndef MATRIXD_CORE_MULTI_GPU_CANNON_RANKS_H_
#define MATRIXD_CORE_MULTI_GPU_CANNON_RANKS_H_

#include <cublas_v2.h>
#include <nccl.h>

#include <memory>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/cuda/cuda_stream.h"
#include "core/memory_resource.h"

namespace matrixd::multi_gpu {

struct NcclCommDestroyer {
  void operator()(ncclComm_t comm) const { ncclCommDestroy(comm); }
};
using OwnedComm = std::unique_ptr<std::remove_pointer_t<ncclComm_t>, NcclCommDestroyer>;

// One GPU's share: its NCCL rank, streams, cuBLAS handle, round events and the memory resource
// its blocks come from (the device's, as the CUDA backend's contexts allocate through). Owns all
// but the resource.
struct GpuRank {
  // Takes `comm` and makes the rest on `device` (which it leaves current).
  static absl::StatusOr<std::unique_ptr<GpuRank>> Create(int device, OwnedComm comm,
                                                         const DeviceMemoryLimit& memory_limit);
  GpuRank(const GpuRank&) = delete;
  GpuRank& operator=(const GpuRank&) = delete;
  // The device stays current while the members (events, streams, then the communicator) go.
  ~GpuRank();

  // Waits for both streams, ignoring errors: the blocks' memory goes back to the pool in the
  // compute stream's order, and after a failure the transfer stream may still be using it.
  void Drain() const;

  const int device;
  const OwnedComm comm;
  MemoryResource* const memory;
  const cuda::CudaStream compute;
  const cuda::CudaStream transfer;
  cuda::CudaEvent products_done;  // the last round's GEMMs have read their buffers
  cuda::CudaEvent shifts_done;    // the last round's shifts have landed
  cublasHandle_t cublas = nullptr;

 private:
  GpuRank(int device, OwnedComm comm, MemoryResource* memory, cuda::CudaStream compute,
          cuda::CudaStream transfer, cuda::CudaEvent products_done, cuda::CudaEvent shifts_done);
};

// A set of ranks (one per GPU of `devices`, in order, joined by one communicator) lent from the
// pool for one product. Keep() marks the product done, so that the destructor gives the set back
// to the pool; without it the set is destroyed.
class RankSetLease {
 public:
  // An idle set of `devices` under `memory_limit`, or a new one. NCCL, CUDA and cuBLAS errors as
  // the calls' statuses.
  static absl::StatusOr<RankSetLease> Acquire(const std::vector<int>& devices,
                                              const DeviceMemoryLimit& memory_limit);
  RankSetLease(RankSetLease&&) = default;
  RankSetLease& operator=(RankSetLease&&) = default;
  ~RankSetLease();

  std::vector<std::unique_ptr<GpuRank>>& ranks() { return ranks_; }
  // Whether Acquire took the set from the pool (false: created for this product).
  bool reused() const { return reused_; }
  void Keep() { keep_ = true; }

 private:
  RankSetLease(std::vector<int> devices, DeviceMemoryLimit memory_limit,
               std::vector<std::unique_ptr<GpuRank>> ranks, bool reused)
      : devices_(std::move(devices)),
        memory_limit_(memory_limit),
        ranks_(std::move(ranks)),
        reused_(reused) {}

  std::vector<int> devices_;
  DeviceMemoryLimit memory_limit_;
  std::vector<std::unique_ptr<GpuRank>> ranks_;
  bool reused_ = false;
  bool keep_ = false;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CANNON_RANKS_H_
