// The random primes of one exact determinant on the GPU (core/cuda/exact_determinant.h): uniform
// over [kExactPrimeLow, kExactPrimeHigh), without repeats, in the order of one random sequence.
// Those that cover the plan's bound (all that can ever be used) are drawn on a thread of their own
// from construction, so that the host draws them while the device computes the floating-point
// determinant (~1.5 ms for n = 1000); Next() hands them out in order, then draws on demand. The
// sequence, and so every prime taken and every certificate, is the same as drawing each on demand.
// Not copyable or movable; the thread is joined at the first Next() or on destruction.
#ifndef MATRIXD_CORE_CUDA_EXACT_PRIMES_H_
#define MATRIXD_CORE_CUDA_EXACT_PRIMES_H_

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/cpu/multimodular.h"

namespace matrixd::cuda {

class ExactPrimes {
 public:
  // Starts drawing `ahead` primes (ExactPlan::primes: enough to cover Hadamard's bound).
  explicit ExactPrimes(int ahead);
  ~ExactPrimes();
  ExactPrimes(const ExactPrimes&) = delete;
  ExactPrimes& operator=(const ExactPrimes&) = delete;

  // The next prime of the sequence.
  uint64_t Next();
  // Primes handed out by Next() so far.
  size_t taken() const { return taken_; }

 private:
  void Join();

  cpu::RandomPrimeSource source_;
  std::vector<uint64_t> ahead_;
  size_t taken_ = 0;
  std::thread drawing_;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_EXACT_PRIMES_H_
