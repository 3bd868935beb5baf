// Exact integer results from residues modulo several word-size primes (Chinese remaindering), for
// the exact determinant and permanent of INT64 matrices.
#ifndef MATRIXD_CORE_CPU_MULTIMODULAR_H_
#define MATRIXD_CORE_CPU_MULTIMODULAR_H_

#include <cstdint>
#include <string>
#include <vector>

namespace matrixd::cpu {

// The `count` largest primes below 2^62, largest first.
std::vector<uint64_t> LargePrimes(int count);

// How many primes of LargePrimes() are needed so that their product exceeds 2 * 2^bound_bits
// (enough to recover any integer x with |x| < 2^bound_bits).
int PrimesForBound(double bound_bits);

// The unique integer x with |x| < (product of primes) / 2 and x = residues[i] mod primes[i], in
// decimal. REQUIRES: residues.size() == primes.size() >= 1, distinct primes.
std::string ReconstructSigned(const std::vector<uint64_t>& residues,
                              const std::vector<uint64_t>& primes);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_MULTIMODULAR_H_
