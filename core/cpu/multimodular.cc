#include "core/cpu/multimodular.h"

#include <gmp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

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

void SetUint64(mpz_ptr z, uint64_t v) { mpz_import(z, 1, 1, sizeof(v), 0, 0, &v); }

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

// x := the integer with |x| < (product of the first `count` primes) / 2 and the given residues.
void Reconstruct(const std::vector<uint64_t>& residues, const std::vector<uint64_t>& primes,
                 size_t count, mpz_ptr x) {
  BigInt modulus, term, p, tmp;
  SetUint64(x, residues[0] % primes[0]);
  SetUint64(modulus.get(), primes[0]);
  // Garner-style incremental CRT: x += modulus * ((r - x) * modulus^-1 mod p).
  for (size_t i = 1; i < count; ++i) {
    SetUint64(p.get(), primes[i]);
    mpz_mod(tmp.get(), x, p.get());
    const uint64_t x_mod_p = mpz_get_ui(tmp.get());
    mpz_mod(tmp.get(), modulus.get(), p.get());
    const uint64_t m_mod_p = mpz_get_ui(tmp.get());
    const uint64_t delta = MulMod(SubMod(residues[i] % primes[i], x_mod_p, primes[i]),
                                  InvMod(m_mod_p, primes[i]), primes[i]);
    SetUint64(tmp.get(), delta);
    mpz_mul(term.get(), modulus.get(), tmp.get());
    mpz_add(x, x, term.get());
    mpz_mul(modulus.get(), modulus.get(), p.get());
  }
  // Symmetric range: x > modulus / 2 stands for x - modulus.
  mpz_fdiv_q_2exp(tmp.get(), modulus.get(), 1);
  if (mpz_cmp(x, tmp.get()) > 0) mpz_sub(x, x, modulus.get());
}

}  // namespace

std::string ReconstructSigned(const std::vector<uint64_t>& residues,
                              const std::vector<uint64_t>& primes) {
  BigInt x;
  Reconstruct(residues, primes, primes.size(), x.get());
  std::unique_ptr<char, void (*)(void*)> text(mpz_get_str(nullptr, 10, x.get()), free);
  return std::string(text.get());
}

bool ReconstructionExtends(const std::vector<uint64_t>& residues,
                           const std::vector<uint64_t>& primes, size_t count) {
  BigInt x;
  Reconstruct(residues, primes, count, x.get());
  static_assert(sizeof(unsigned long) == sizeof(uint64_t));  // NOLINT(runtime/int)
  for (size_t i = count; i < primes.size(); ++i) {
    // mpz_fdiv_ui: the remainder in [0, p), whatever the sign of x.
    if (mpz_fdiv_ui(x.get(), primes[i]) != residues[i] % primes[i]) return false;
  }
  return true;
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
