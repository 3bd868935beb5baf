// The Chinese remaindering of core/cpu/multimodular.h (ReconstructSigned, ReconstructionExtends,
// ReconstructIfExtends) against an independent reference: GMP's sum over the primes of
// r_i (M / p_i) ((M / p_i)^-1 mod p_i) mod M, taken into the symmetric range. The primes are those
// the exact determinants use: 24-bit ones drawn at random (the GPU, taken two at a time by the
// reconstruction), the largest below 2^62 (the CPU), and 31-bit ones whose pairs sit at the
// pairing's limit of 2^62.
#include <gmp.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/cpu/multimodular.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

// Owns one GMP integer.
class Integer {
 public:
  Integer() { mpz_init(value_); }
  explicit Integer(const std::string& decimal) { mpz_init_set_str(value_, decimal.c_str(), 10); }
  ~Integer() { mpz_clear(value_); }
  Integer(const Integer&) = delete;
  Integer& operator=(const Integer&) = delete;
  mpz_ptr get() { return value_; }
  std::string Decimal() const {
    std::unique_ptr<char, void (*)(void*)> text(mpz_get_str(nullptr, 10, value_), free);
    return std::string(text.get());
  }

 private:
  mpz_t value_;
};

void SetWord(mpz_ptr z, uint64_t v) { mpz_import(z, 1, 1, sizeof(v), 0, 0, &v); }

// The product of the primes.
void Product(const std::vector<uint64_t>& primes, mpz_ptr m) {
  Integer p;
  mpz_set_ui(m, 1);
  for (const uint64_t q : primes) {
    SetWord(p.get(), q);
    mpz_mul(m, m, p.get());
  }
}

// The reference: the textbook CRT sum, in the symmetric range (-M/2, M/2].
std::string ReferenceReconstruction(const std::vector<uint64_t>& residues,
                                    const std::vector<uint64_t>& primes) {
  Integer m, x, cofactor, p, inverse, term;
  Product(primes, m.get());
  for (size_t i = 0; i < primes.size(); ++i) {
    SetWord(p.get(), primes[i]);
    mpz_divexact(cofactor.get(), m.get(), p.get());
    EXPECT_NE(mpz_invert(inverse.get(), cofactor.get(), p.get()), 0);
    SetWord(term.get(), residues[i] % primes[i]);
    mpz_mul(term.get(), term.get(), inverse.get());
    mpz_mod(term.get(), term.get(), p.get());
    mpz_addmul(x.get(), term.get(), cofactor.get());
  }
  mpz_mod(x.get(), x.get(), m.get());
  Integer half;
  mpz_fdiv_q_2exp(half.get(), m.get(), 1);
  if (mpz_cmp(x.get(), half.get()) > 0) mpz_sub(x.get(), x.get(), m.get());
  return x.Decimal();
}

// x mod each prime, in [0, p).
std::vector<uint64_t> ResiduesOf(const std::string& decimal, const std::vector<uint64_t>& primes) {
  Integer x(decimal);
  std::vector<uint64_t> residues;
  for (const uint64_t p : primes) residues.push_back(mpz_fdiv_ui(x.get(), p));
  return residues;
}

std::vector<uint64_t> RandomPrimes(uint64_t low, uint64_t high, int count, uint64_t seed) {
  cpu::RandomPrimeSource source(low, high, seed);
  std::vector<uint64_t> primes;
  for (int i = 0; i < count; ++i) primes.push_back(source.Next());
  return primes;
}

// The three kinds of primes, with an odd count (the last prime left unpaired).
std::vector<std::vector<uint64_t>> PrimeSets() {
  return {RandomPrimes(uint64_t{1} << 23, uint64_t{1} << 24, 1027, 1),
          cpu::LargePrimes(41),
          RandomPrimes((uint64_t{1} << 31) - (uint64_t{1} << 20), uint64_t{1} << 31, 77, 2),
          {3}};
}

TEST(CrtReconstruction, RandomResiduesMatchTheReference) {
  std::mt19937_64 rng(17);
  for (const std::vector<uint64_t>& primes : PrimeSets()) {
    SCOPED_TRACE(primes.size());
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<uint64_t> residues;
      for (const uint64_t p : primes) residues.push_back(rng() % p);
      EXPECT_EQ(cpu::ReconstructSigned(residues, primes),
                ReferenceReconstruction(residues, primes));
    }
  }
}

TEST(CrtReconstruction, ZeroOneAndMinusOne) {
  for (const std::vector<uint64_t>& primes : PrimeSets()) {
    SCOPED_TRACE(primes.size());
    for (const std::string x : {"0", "1", "-1"}) {
      const std::vector<uint64_t> residues = ResiduesOf(x, primes);
      EXPECT_EQ(cpu::ReconstructSigned(residues, primes), x);
      EXPECT_TRUE(cpu::ReconstructionExtends(residues, primes, 1));
      EXPECT_EQ(cpu::ReconstructIfExtends(residues, primes, 1), std::optional<std::string>(x));
    }
  }
}

TEST(CrtReconstruction, NegativeValuesNearTheDeterminantsSize) {
  // A 7064-digit value (issue 13's n = 1000 determinant), negative, from 1027 primes of 24 bits.
  const std::vector<uint64_t> primes = RandomPrimes(uint64_t{1} << 23, uint64_t{1} << 24, 1027, 3);
  Integer x;
  mpz_ui_pow_ui(x.get(), 10, 7063);
  mpz_mul_ui(x.get(), x.get(), 7);
  mpz_add_ui(x.get(), x.get(), 12345);
  mpz_neg(x.get(), x.get());
  const std::string decimal = x.Decimal();
  const std::vector<uint64_t> residues = ResiduesOf(decimal, primes);
  EXPECT_EQ(cpu::ReconstructSigned(residues, primes), decimal);
  // The first primes whose product exceeds 2 |x| (~23,467 bits) hold it; the rest confirm it.
  size_t hold = 0;
  for (double bits = -1.0; bits <= mpz_sizeinbase(x.get(), 2) + 1.0; ++hold) {
    bits += std::log2(static_cast<double>(primes[hold]));
  }
  ASSERT_LT(hold, primes.size());
  EXPECT_EQ(cpu::ReconstructIfExtends(residues, primes, hold), std::optional<std::string>(decimal));
  EXPECT_TRUE(cpu::ReconstructionExtends(residues, primes, hold));
  // 900 primes (~21,000 bits) cannot hold 23,400 bits: another integer, which the rest refute.
  EXPECT_EQ(cpu::ReconstructIfExtends(residues, primes, 900), std::nullopt);
  EXPECT_FALSE(cpu::ReconstructionExtends(residues, primes, 900));
}

TEST(CrtReconstruction, ValuesAtTheEdgeOfTheSymmetricRange) {
  for (const std::vector<uint64_t>& primes : PrimeSets()) {
    SCOPED_TRACE(primes.size());
    Integer m, edge;
    Product(primes, m.get());
    // The product is odd: (M - 1) / 2 and its negative are the largest magnitudes held.
    mpz_sub_ui(edge.get(), m.get(), 1);
    mpz_fdiv_q_2exp(edge.get(), edge.get(), 1);
    const std::string top = edge.Decimal();
    EXPECT_EQ(cpu::ReconstructSigned(ResiduesOf(top, primes), primes), top);
    mpz_neg(edge.get(), edge.get());
    const std::string bottom = edge.Decimal();
    EXPECT_EQ(cpu::ReconstructSigned(ResiduesOf(bottom, primes), primes), bottom);
    // One past the top is the bottom: it has the same residues.
    mpz_neg(edge.get(), edge.get());
    mpz_add_ui(edge.get(), edge.get(), 1);
    EXPECT_EQ(cpu::ReconstructSigned(ResiduesOf(edge.Decimal(), primes), primes), bottom);
  }
}

TEST(CrtReconstruction, ExtendsAgreesWithReconstructIfExtendsOnEveryPrefix) {
  const std::vector<uint64_t> primes = RandomPrimes(uint64_t{1} << 23, uint64_t{1} << 24, 40, 4);
  // A 300-bit value: 13 primes of 24 bits hold it with its sign.
  Integer x;
  mpz_ui_pow_ui(x.get(), 3, 190);
  const std::vector<uint64_t> residues = ResiduesOf(x.Decimal(), primes);
  for (size_t count = 1; count <= primes.size(); ++count) {
    SCOPED_TRACE(count);
    const bool extends = cpu::ReconstructionExtends(residues, primes, count);
    const std::optional<std::string> value = cpu::ReconstructIfExtends(residues, primes, count);
    EXPECT_EQ(extends, value.has_value());
    if (value.has_value()) {
      EXPECT_EQ(*value, x.Decimal());
    }
    if (count >= 14) {
      EXPECT_TRUE(extends);
    }
    if (count <= 11) {
      EXPECT_FALSE(extends);
    }
  }
  // One residue off among the confirming ones: never stable.
  std::vector<uint64_t> off = residues;
  off[30] = (off[30] + 1) % primes[30];
  EXPECT_EQ(cpu::ReconstructIfExtends(off, primes, 20), std::nullopt);
}

}  // namespace
}  // namespace matrixd
