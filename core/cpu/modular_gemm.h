// The trailing update of the blocked modular LU, C -= A B over Z/p, in each representation of
// core/cpu/modular_fields.h: BLAS dgemm with delayed reduction for float64 residues (two, on the
// halves of B, for primes above 2^25), 128-bit accumulators in cache-sized tiles for uint64
// residues.
#ifndef MATRIXD_CORE_CPU_MODULAR_GEMM_H_
#define MATRIXD_CORE_CPU_MODULAR_GEMM_H_

#include <cstdint>

#include "core/cpu/modular_fields.h"

namespace matrixd::cpu {

// The operands of C -= A B: row-major with leading dimensions; A is m x k, B k x n, C m x n.
template <typename T>
struct ModularProduct {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  const T* a = nullptr;
  int64_t lda = 0;
  const T* b = nullptr;
  int64_t ldb = 0;
  T* c = nullptr;
  int64_t ldc = 0;
};

// C -= A B over Z/p, entries in the field's form (and C left so). Any k. Uses up to `threads`
// threads; the float64 product itself is threaded by OpenBLAS.
void SubtractProduct(const BalancedDoubleField& field, const ModularProduct<double>& product,
                     int threads);
void SubtractProduct(const Uint64Field& field, const ModularProduct<uint64_t>& product,
                     int threads);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_MODULAR_GEMM_H_
