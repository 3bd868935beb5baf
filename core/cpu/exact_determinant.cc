#include "core/cpu/exact_determinant.h"

#include <gmp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/cpu/modular_elimination.h"
#include "core/cpu/multimodular.h"
#include "core/modular_arithmetic.h"
#include "core/status_macros.h"

namespace matrixd::cpu {
namespace {

// The decimal integer as a ScaledNumber, rounded to nearest: its top 64 bits go through long
// double (exact) to double (rounded), which only misrounds a tie decided by lower bits.
ScaledNumber Rounded(const std::string& decimal) {
  mpz_t z;
  mpz_init_set_str(z, decimal.c_str(), 10);
  const int sign = mpz_sgn(z);
  mpz_abs(z, z);
  const int64_t bits = static_cast<int64_t>(mpz_sizeinbase(z, 2));
  const int64_t shift = std::max<int64_t>(0, bits - 64);
  mpz_tdiv_q_2exp(z, z, static_cast<mp_bitcnt_t>(shift));
  uint64_t top = 0;
  mpz_export(&top, nullptr, -1, sizeof(top), 0, 0, z);
  mpz_clear(z);
  ScaledNumber x = ScaledNumber::Of(sign * static_cast<double>(static_cast<long double>(top)));
  for (int64_t e = shift; e != 0;) {
    const int64_t step = std::min<int64_t>(e, 1000);
    x *= std::ldexp(1.0, static_cast<int>(step));
    e -= step;
  }
  return x;
}

}  // namespace

int PrimeCountForBound(double bound_bits) {
  return std::isinf(bound_bits) ? 0 : PrimesForBound(bound_bits);
}

absl::StatusOr<ExactDeterminant> ExactIntegerDeterminant(std::span<const int64_t> a, int64_t n,
                                                         int primes, double bound_bits, int threads,
                                                         const ProgressRange& progress,
                                                         ComputeStats* stats) {
  const std::vector<uint64_t> moduli = LargePrimes(primes);
  std::vector<uint64_t> residues;
  residues.reserve(moduli.size());
  for (size_t k = 0; k < moduli.size(); ++k) {
    const uint64_t p = moduli[k];
    std::vector<uint64_t> reduced(a.size());
    for (size_t i = 0; i < a.size(); ++i) reduced[i] = ReduceSigned(a[i], p);
    stats->bytes_moved += 2 * a.size() * sizeof(uint64_t);
    const double share = 1.0 / static_cast<double>(moduli.size());
    MATRIXD_ASSIGN_OR_RETURN(
        uint64_t residue,
        ModularEliminationDeterminant(std::move(reduced), n, p, threads,
                                      progress.Part(share * k, share * (k + 1)), stats));
    residues.push_back(residue);
  }
  ExactDeterminant det;
  det.decimal = ReconstructSigned(residues, moduli);
  det.rounded = Rounded(det.decimal);
  det.certificate = MultimodularCertificate("multimodular: elimination mod each prime, CRT", moduli,
                                            std::move(residues), bound_bits);
  return det;
}

}  // namespace matrixd::cpu
