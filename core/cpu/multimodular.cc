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

std::string ReconstructSigned(const std::vector<uint64_t>& residues,
                              const std::vector<uint64_t>& primes) {
  BigInt x, modulus, term, p, tmp;
  SetUint64(x.get(), residues[0] % primes[0]);
  SetUint64(modulus.get(), primes[0]);
  // Garner-style incremental CRT: x += modulus * ((r - x) * modulus^-1 mod p).
  for (size_t i = 1; i < primes.size(); ++i) {
    SetUint64(p.get(), primes[i]);
    mpz_mod(tmp.get(), x.get(), p.get());
    const uint64_t x_mod_p = mpz_get_ui(tmp.get());
    mpz_mod(tmp.get(), modulus.get(), p.get());
    const uint64_t m_mod_p = mpz_get_ui(tmp.get());
    const uint64_t delta = MulMod(SubMod(residues[i] % primes[i], x_mod_p, primes[i]),
                                  InvMod(m_mod_p, primes[i]), primes[i]);
    SetUint64(tmp.get(), delta);
    mpz_mul(term.get(), modulus.get(), tmp.get());
    mpz_add(x.get(), x.get(), term.get());
    mpz_mul(modulus.get(), modulus.get(), p.get());
  }
  // Symmetric range: x > modulus / 2 stands for x - modulus.
  mpz_fdiv_q_2exp(tmp.get(), modulus.get(), 1);
  if (mpz_cmp(x.get(), tmp.get()) > 0) mpz_sub(x.get(), x.get(), modulus.get());
  std::unique_ptr<char, void (*)(void*)> text(mpz_get_str(nullptr, 10, x.get()), free);
  return std::string(text.get());
}

}  // namespace matrixd::cpu
