// Hopper's bulk copies from global into shared memory (cp.async.bulk, the copy engine beside each
// SM that TMA uses), completed on an mbarrier, as thin device functions. A kernel that streams
// a matrix through shared memory issues a stage's copies from a few threads (no registers held
// while the bytes travel) and waits on the stage's barrier with the stage's phase parity.
// REQUIRES sm_90 or later; every address and size 16-byte aligned / a multiple of 16.
#ifndef MATRIXD_CORE_CUDA_BULK_COPY_CUH_
#define MATRIXD_CORE_CUDA_BULK_COPY_CUH_

#include <cstdint>

namespace matrixd::cuda {

__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One thread: the barrier expects `arrivals` arrivals a phase. Then FenceBarrierInit by the same
// thread and a __syncthreads before any other thread or the copy engine uses it.
__device__ __forceinline__ void BarrierInit(uint64_t* barrier, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SharedAddress(barrier)),
               "r"(arrivals)
               : "memory");
}
__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival on the barrier that also expects `bytes` more bytes of copies in this phase.
__device__ __forceinline__ void BarrierArriveExpectBytes(uint64_t* barrier, uint32_t bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(SharedAddress(barrier)),
      "r"(bytes)
      : "memory");
}

// Blocks until the barrier's phase of this parity (0, 1, 0, ... phase by phase) has completed.
__device__ __forceinline__ void BarrierWait(uint64_t* barrier, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(SharedAddress(barrier)), "r"(parity)
        : "memory");
  } while (done == 0);
}

// Orders this thread's earlier shared-memory accesses (the generic proxy) before bulk copies it
// issues next into the same bytes (the async proxy).
__device__ __forceinline__ void FenceSharedForBulkCopies() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// An L2 policy for data read once: evicted first, so that it leaves L2 to others.
__device__ __forceinline__ uint64_t EvictFirstPolicy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// Copies `bytes` from global `source` to shared `target`, counted on `barrier` when they land.
__device__ __forceinline__ void BulkCopyToShared(void* target, const void* source, uint32_t bytes,
                                                 uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(SharedAddress(target)),
      "l"(source), "r"(bytes), "r"(SharedAddress(barrier))
      : "memory");
}

// The same with an L2 policy (EvictFirstPolicy) for the source's lines.
__device__ __forceinline__ void BulkCopyToShared(void* target, const void* source, uint32_t bytes,
                                                 uint64_t* barrier, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1], %2, [%3], %4;" ::"r"(SharedAddress(target)),
      "l"(source), "r"(bytes), "r"(SharedAddress(barrier)), "l"(policy)
      : "memory");
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BULK_COPY_CUH_
