#include "core/multi_gpu/cannon_ranks.h"

#include <cuda_runtime.h>

#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_memory_resource.h"
#include "core/multi_gpu/nccl_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

// Idle sets kept per key: enough for the products a server runs at once on the same GPUs.
constexpr size_t kIdleSetsPerKey = 2;

using RankSet = std::vector<std::unique_ptr<GpuRank>>;

// The idle sets, by GPUs and memory limit (a rank's memory resource depends on both). Never
// destroyed: communicators and handles must not be torn down after the CUDA runtime at exit.
class RankSetPool {
 public:
  static RankSetPool& Instance() {
    static RankSetPool* const pool = new RankSetPool();
    return *pool;
  }

  // An idle set of the key, or an empty one.
  RankSet Take(const std::vector<int>& devices, const DeviceMemoryLimit& limit) {
    absl::MutexLock lock(&mutex_);
    auto it = idle_.find(KeyOf(devices, limit));
    if (it == idle_.end() || it->second.empty()) return {};
    RankSet set = std::move(it->second.back());
    it->second.pop_back();
    return set;
  }

  // Keeps `set` for the next product of the key, unless enough are kept already.
  void Give(const std::vector<int>& devices, const DeviceMemoryLimit& limit, RankSet set) {
    {
      absl::MutexLock lock(&mutex_);
      std::vector<RankSet>& idle = idle_[KeyOf(devices, limit)];
      if (idle.size() < kIdleSetsPerKey) {
        idle.push_back(std::move(set));
        return;
      }
    }
    // `set` is destroyed here, outside the lock.
  }

 private:
  using Key = std::tuple<std::vector<int>, uint64_t, double>;
  static Key KeyOf(const std::vector<int>& devices, const DeviceMemoryLimit& limit) {
    return {devices, limit.bytes, limit.fraction};
  }

  absl::Mutex mutex_;
  absl::flat_hash_map<Key, std::vector<RankSet>> idle_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<GpuRank>> GpuRank::Create(int device, OwnedComm comm,
                                                         const DeviceMemoryLimit& memory_limit) {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  MATRIXD_ASSIGN_OR_RETURN(MemoryResource * memory,
                           cuda::DeviceMemoryResource(device, memory_limit));
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaStream compute, cuda::CudaStream::Create());
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaStream transfer, cuda::CudaStream::Create());
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaEvent products_done, cuda::CudaEvent::Create());
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaEvent shifts_done, cuda::CudaEvent::Create());
  std::unique_ptr<GpuRank> rank(new GpuRank(device, std::move(comm), memory, std::move(compute),
                                            std::move(transfer), std::move(products_done),
                                            std::move(shifts_done)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&rank->cublas));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(rank->cublas, rank->compute.get()));
  return rank;
}

GpuRank::GpuRank(int device, OwnedComm comm, MemoryResource* memory, cuda::CudaStream compute,
                 cuda::CudaStream transfer, cuda::CudaEvent products_done,
                 cuda::CudaEvent shifts_done)
    : device(device),
      comm(std::move(comm)),
      memory(memory),
      compute(std::move(compute)),
      transfer(std::move(transfer)),
      products_done(std::move(products_done)),
      shifts_done(std::move(shifts_done)) {}

GpuRank::~GpuRank() {
  cudaSetDevice(device);
  if (cublas != nullptr) cublasDestroy(cublas);
}

void GpuRank::Drain() const {
  cudaSetDevice(device);
  cudaStreamSynchronize(compute.get());
  cudaStreamSynchronize(transfer.get());
}

absl::StatusOr<RankSetLease> RankSetLease::Acquire(const std::vector<int>& devices,
                                                   const DeviceMemoryLimit& memory_limit) {
  RankSet set = RankSetPool::Instance().Take(devices, memory_limit);
  if (!set.empty()) return RankSetLease(devices, memory_limit, std::move(set), /*reused=*/true);
  const int gpus = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms(static_cast<size_t>(gpus));
  MATRIXD_NCCL_RETURN_IF_ERROR(ncclCommInitAll(comms.data(), gpus, devices.data()));
  std::vector<OwnedComm> owned_comms;
  for (ncclComm_t comm : comms) owned_comms.emplace_back(comm);
  for (int r = 0; r < gpus; ++r) {
    MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<GpuRank> rank,
                             GpuRank::Create(devices[r], std::move(owned_comms[r]), memory_limit));
    set.push_back(std::move(rank));
  }
  return RankSetLease(devices, memory_limit, std::move(set), /*reused=*/false);
}

RankSetLease::~RankSetLease() {
  if (ranks_.empty() || !keep_) return;
  RankSetPool::Instance().Give(devices_, memory_limit_, std::move(ranks_));
}

}  // namespace matrixd::multi_gpu
