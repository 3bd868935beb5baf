// Exact integer results from residues modulo several word-size primes (Chinese remaindering), for
// the exact determinant and permanent of INT64 matrices.
#ifndef MATRIXD_CORE_CPU_MULTIMODULAR_H_
#define MATRIXD_CORE_CPU_MULTIMODULAR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
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

// Whether the integer ReconstructSigned gives for the first `count` primes also has the residues
// of the rest: then it is also the reconstruction from all of them (the early-stop test).
// REQUIRES: 1 <= count <= primes.size() == residues.size(), distinct primes.
bool ReconstructionExtends(const std::vector<uint64_t>& residues,
                           const std::vector<uint64_t>& primes, size_t count);

// ReconstructSigned over the first `count` primes when ReconstructionExtends holds, nullopt
// otherwise: the early stop's test and its answer from one reconstruction.
// REQUIRES: as ReconstructionExtends.
std::optional<std::string> ReconstructIfExtends(const std::vector<uint64_t>& residues,
                                                const std::vector<uint64_t>& primes, size_t count);

// Distinct primes of [low, high) drawn uniformly at random (each draw uniform among the primes
// not drawn before), so that a probabilistic early stop holds whatever the input.
class RandomPrimeSource {
 public:
  // REQUIRES: [low, high) holds more primes than will be drawn; high <= 2^62.
  RandomPrimeSource(uint64_t low, uint64_t high, uint64_t seed);
  uint64_t Next();
  size_t drawn() const { return drawn_.size(); }

 private:
  uint64_t low_;
  uint64_t high_;
  uint64_t state_;  // splitmix64
  std::unordered_set<uint64_t> drawn_;
};

// An upper bound on the probability that `confirming` primes drawn uniformly without replacement
// from `pool` primes, each at least 2^min_prime_bits, all divide one fixed non-zero integer
// below 2^value_bits: such an integer has at most t = floor(value_bits / min_prime_bits) of them,
// and the chance is C(t, m) / C(pool, m), m = confirming (0 when t < m).
double AllDivideProbability(double value_bits, double min_prime_bits, int confirming, double pool);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_MULTIMODULAR_H_
