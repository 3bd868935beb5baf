#include "core/cpu/multimodular.h"

#include <gmp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <utility>

#include "core/modular_arithmetic.h"

namespace matrixd::cpu {
namespace {

// Owns one GMP integer.
class BigInt {
 public:
  BigInt() { mpz_init(value_); }
  ~BigInt() { mpz_clear(value_); }
  BigInt(const BigInt&) = delete;
  BigInt& operator=(const BigInt&) = delete;
  mpz_ptr get() { return value_; }

 private:
  mpz_t value_;
};

}  // namespace

std::vector<uint64_t> LargePrimes(int count) {
  std::vector<uint64_t> primes;
  for (uint64_t candidate = kModulusLimit - 1; static_cast<int>(primes.size()) < count;
       candidate -= 2) {
    if (IsPrime(candidate)) primes.push_back(candidate);
  }
  return primes;
}

int PrimesForBound(double bound_bits) {
  // Each prime contributes just under 62 bits; count 61 to stay safe, plus one bit for the sign.
  return std::max(1, static_cast<int>(std::ceil((bound_bits + 2.0) / 61.0)));
}

namespace {

// a^-1 mod q for gcd(a, q) = 1 and any q < 2^62 (prime or not), by the extended Euclidean
// algorithm.
uint64_t InverseModWord(uint64_t a, uint64_t q) {
  int64_t r0 = static_cast<int64_t>(q), r1 = static_cast<int64_t>(a % q);
  int64_t t0 = 0, t1 = 1;
  while (r1 != 0) {
    const int64_t quotient = r0 / r1;
    r0 = std::exchange(r1, r0 - quotient * r1);
    t0 = std::exchange(t1, t0 - quotient * t1);
  }
  return static_cast<uint64_t>(t0 < 0 ? t0 + static_cast<int64_t>(q) : t0);
}

// x := the integer with |x| < (product of the first `count` primes) / 2 and the given residues.
void Reconstruct(const std::vector<uint64_t>& residues, const std::vector<uint64_t>& primes,
                 size_t count, mpz_ptr x) {
  static_assert(sizeof(unsigned long) == sizeof(uint64_t));  // NOLINT(runtime/int)
  BigInt modulus, half;
  mpz_set_ui(x, 0);
  mpz_set_ui(modulus.get(), 1);
  // Garner-style incremental CRT: x += modulus * ((r - x) * modulus^-1 mod q), with q two primes
  // at a time when their product fits a word (the GPU's 24-bit primes), their residue r mod q by a
  // CRT of two words. The word-sized GMP calls (remainders, product and sum by one limb) allocate
  // nothing; each step costs two passes over x and the modulus, so the whole is quadratic in the
  // primes, and pairing them halves it (~0.5 ms for 1000 primes of 24 bits).
  for (size_t i = 0; i < count;) {
    uint64_t q = primes[i];
    uint64_t r = residues[i] % q;
    if (i + 1 < count && primes[i + 1] < kModulusLimit / q) {
      const uint64_t p = primes[i + 1];
      const uint64_t lift =
          MulMod(SubMod(residues[i + 1] % p, r % p, p), InverseModWord(q % p, p), p);
      r += q * lift;  // < q p
      q *= p;
      i += 2;
    } else {
      i += 1;
    }
    const uint64_t x_mod_q = mpz_fdiv_ui(x, q);
    const uint64_t m_mod_q = mpz_fdiv_ui(modulus.get(), q);
    const uint64_t delta = MulMod(SubMod(r, x_mod_q, q), InverseModWord(m_mod_q, q), q);
    mpz_addmul_ui(x, modulus.get(), delta);
    mpz_mul_ui(modulus.get(), modulus.get(), q);
  }
  // Symmetric range: x > modulus / 2 stands for x - modulus.
  mpz_fdiv_q_2exp(half.get(), modulus.get(), 1);
  if (mpz_cmp(x, half.get()) > 0) mpz_sub(x, x, modulus.get());
}

}  // namespace

namespace {

std::string Decimal(mpz_srcptr x) {
  std::unique_ptr<char, void (*)(void*)> text(mpz_get_str(nullptr, 10, x), free);
  return std::string(text.get());
}

// Whether x has the residues of primes[count..).
bool HasResidues(mpz_srcptr x, const std::vector<uint64_t>& residues,
                 const std::vector<uint64_t>& primes, size_t count) {
  for (size_t i = count; i < primes.size(); ++i) {
    // mpz_fdiv_ui: the remainder in [0, p), whatever the sign of x.
    if (mpz_fdiv_ui(x, primes[i]) != residues[i] % primes[i]) return false;
  }
  return true;
}

}  // namespace

std::string ReconstructSigned(const std::vector<uint64_t>& residues,
                              const std::vector<uint64_t>& primes) {
  BigInt x;
  Reconstruct(residues, primes, primes.size(), x.get());
  return Decimal(x.get());
}

bool ReconstructionExtends(const std::vector<uint64_t>& residues,
                           const std::vector<uint64_t>& primes, size_t count) {
  BigInt x;
  Reconstruct(residues, primes, count, x.get());
  return HasResidues(x.get(), residues, primes, count);
}

std::optional<std::string> ReconstructIfExtends(const std::vector<uint64_t>& residues,
                                                const std::vector<uint64_t>& primes, size_t count) {
  BigInt x;
  Reconstruct(residues, primes, count, x.get());
  if (!HasResidues(x.get(), residues, primes, count)) return std::nullopt;
  return Decimal(x.get());
}

RandomPrimeSource::RandomPrimeSource(uint64_t low, uint64_t high, uint64_t seed)
    : low_(low), high_(high), state_(seed) {}

uint64_t RandomPrimeSource::Next() {
  while (true) {
    // splitmix64 (Steele, Lea and Flood 2014); the modulo bias is below (high - low) / 2^64.
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const uint64_t candidate = low_ + z % (high_ - low_);
    if (IsPrime(candidate) && drawn_.insert(candidate).second) return candidate;
  }
}

double AllDivideProbability(double value_bits, double min_prime_bits, int confirming, double pool) {
  const double divisors = std::floor(std::max(value_bits, 0.0) / min_prime_bits);
  double probability = 1.0;
  for (int i = 0; i < confirming; ++i) {
    probability *= std::max(divisors - i, 0.0) / (pool - i);
  }
  return probability;
}

}  // namespace matrixd::cpu
