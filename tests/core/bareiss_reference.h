// The exact integer determinant by Bareiss' fraction-free elimination over GMP integers: the
// reference that determinant tests check exact and modular results against.
#ifndef MATRIXD_TESTS_CORE_BAREISS_REFERENCE_H_
#define MATRIXD_TESTS_CORE_BAREISS_REFERENCE_H_

#include <gmp.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace matrixd::testing {

// Owns one GMP integer.
class BigInt {
 public:
  BigInt() { mpz_init(value_); }
  explicit BigInt(int64_t v) : BigInt() { Set(v); }
  ~BigInt() { mpz_clear(value_); }
  BigInt(const BigInt&) = delete;
  BigInt& operator=(const BigInt&) = delete;
  mpz_ptr get() { return value_; }
  mpz_srcptr get() const { return value_; }
  void Set(int64_t v) {
    // mpz_set_si takes a long, which is 64-bit here; go through the magnitude to allow INT64_MIN.
    const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    mpz_import(value_, 1, 1, sizeof(magnitude), 0, 0, &magnitude);
    if (v < 0) mpz_neg(value_, value_);
  }
  std::string Decimal() const {
    std::unique_ptr<char, void (*)(void*)> text(mpz_get_str(nullptr, 10, value_), free);
    return text.get();
  }

 private:
  mpz_t value_;
};

// det of the n x n row-major `m` (overwritten), into det.
inline void BareissDeterminant(std::vector<std::unique_ptr<BigInt>>& m, int n, BigInt& det) {
  const auto at = [&](int i, int j) { return m[i * n + j]->get(); };
  BigInt previous(1), t1, t2;
  bool negate = false;
  for (int k = 0; k < n - 1; ++k) {
    if (mpz_sgn(at(k, k)) == 0) {
      int swap_row = k + 1;
      while (swap_row < n && mpz_sgn(at(swap_row, k)) == 0) ++swap_row;
      if (swap_row == n) {
        mpz_set_ui(det.get(), 0);
        return;
      }
      for (int j = 0; j < n; ++j) std::swap(m[k * n + j], m[swap_row * n + j]);
      negate = !negate;
    }
    for (int i = k + 1; i < n; ++i) {
      for (int j = k + 1; j < n; ++j) {
        mpz_mul(t1.get(), at(i, j), at(k, k));
        mpz_mul(t2.get(), at(i, k), at(k, j));
        mpz_sub(t1.get(), t1.get(), t2.get());
        mpz_divexact(at(i, j), t1.get(), previous.get());
      }
    }
    mpz_set(previous.get(), at(k, k));
  }
  mpz_set(det.get(), at(n - 1, n - 1));
  if (negate) mpz_neg(det.get(), det.get());
}

// det of the n x n row-major `entries`, into det.
inline void BareissDeterminant(const std::vector<int64_t>& entries, int n, BigInt& det) {
  std::vector<std::unique_ptr<BigInt>> m;
  for (int64_t v : entries) m.push_back(std::make_unique<BigInt>(v));
  BareissDeterminant(m, n, det);
}

// det mod p in [0, p).
inline uint64_t BareissResidue(const std::vector<int64_t>& entries, int n, uint64_t p) {
  BigInt det;
  BareissDeterminant(entries, n, det);
  return mpz_fdiv_ui(det.get(), p);  // floor division: the remainder is in [0, p)
}

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_CORE_BAREISS_REFERENCE_H_
