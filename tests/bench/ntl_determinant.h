// det(A) mod p by NTL (zz_p::init(p), mat_zz_p, determinant) on one thread: the CPU reference the
// modular determinant table measures ours against. Present when the build found NTL
// (MATRIXD_HAVE_NTL); without it every call answers UNAVAILABLE.
#ifndef MATRIXD_TESTS_BENCH_NTL_DETERMINANT_H_
#define MATRIXD_TESTS_BENCH_NTL_DETERMINANT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/matrix.h"

namespace matrixd::bench {

struct NtlDeterminant {
  uint64_t residue = 0;  // in [0, p)
  double seconds = 0.0;  // host clock around determinant() alone, not the conversion before it
};

// Whether this build has NTL.
bool NtlAvailable();

// "NTL 11.5.1, threads: 1", or why there is no NTL.
std::string NtlDescription();

// REQUIRES: p prime. INVALID_ARGUMENT unless a is a non-empty square INT64 matrix and
// 2 <= p < 2^31 (NTL's zz_p takes single-precision moduli); UNAVAILABLE in a build without NTL;
// INTERNAL when NTL throws.
absl::StatusOr<NtlDeterminant> NtlDeterminantModP(const MatrixView& a, uint64_t p);

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_NTL_DETERMINANT_H_
