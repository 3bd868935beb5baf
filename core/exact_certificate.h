// How an exact answer was obtained, shared by every backend: a determinant mod p, and the exact
// integer determinant or permanent of an INT64 matrix reconstructed from residues modulo several
// primes (Chinese remaindering). Enough for a caller to re-check the reconstruction from the
// residues alone (docs/accuracy.md).
#ifndef MATRIXD_CORE_EXACT_CERTIFICATE_H_
#define MATRIXD_CORE_EXACT_CERTIFICATE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace matrixd {

struct ExactCertificate {
  // What ran, e.g. "elimination mod p" or "multimodular: elimination mod each prime, CRT".
  std::string method = {};
  // The moduli, and the answer modulo each (in [0, p)), in the same order.
  std::vector<uint64_t> primes = {};  // "= {}": designated initialisers may leave them out
  std::vector<uint64_t> residues = {};
  // log2 of the a-priori bound B with |answer| <= B the primes must cover (Hadamard's
  // prod_i ||row_i||_2 for a determinant, prod_i sum_j |a_ij| for a permanent); 0 for a residue
  // mod p and for a zero row.
  double bound_bits = 0.0;
  // log2(prod primes) - 1: every integer x with |x| < 2^covered_bits is recovered exactly from
  // its residues. covered_bits > bound_bits whenever the reconstruction is certain.
  double covered_bits = 0.0;
  // Whether the reconstruction stopped before the primes covered the bound (its answer then right
  // with probability at least 1 - error_probability): the CUDA backend's exact determinant
  // (core/cuda/exact_determinant.h).
  bool early_stop = false;
  double error_probability = 0.0;
};

// The answer mod p, computed directly by `method`.
ExactCertificate ResidueCertificate(std::string method, uint64_t p, uint64_t residue);

// An integer reconstructed from `residues` mod `primes` (same length, >= 1), which cover the bound
// 2^bound_bits: no early stop.
ExactCertificate MultimodularCertificate(std::string method, std::vector<uint64_t> primes,
                                         std::vector<uint64_t> residues, double bound_bits);

// Zero because a row of the matrix is zero: no prime was needed.
ExactCertificate ZeroRowCertificate();

}  // namespace matrixd

#endif  // MATRIXD_CORE_EXACT_CERTIFICATE_H_
