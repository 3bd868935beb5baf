// Test support for factorizations kept on the GPUs that computed them
// (core/device_factorization.h), shared by the one-GPU suite (tests/core) and the multi-GPU one
// (tests/multi_gpu): the options that keep one, its factor read back whole, and the check that a
// range read inside rows gives those bytes of it.
#ifndef MATRIXD_TESTS_CORE_KEPT_FACTORIZATION_SUPPORT_H_
#define MATRIXD_TESTS_CORE_KEPT_FACTORIZATION_SUPPORT_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/device_factorization.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"

namespace matrixd::testing {

// `options` with keep_on_devices set.
inline FactorizeOptions Kept(FactorizeOptions options) {
  options.keep_on_devices = true;
  return options;
}

// The kept factor read back whole (DeviceFactorization::Read).
inline Matrix ReadWhole(const DeviceFactorization& kept) {
  Matrix whole(kept.rows(), kept.cols(), kept.dtype());
  EXPECT_TRUE(kept.Read(0, {whole.mutable_bytes(), whole.byte_size()}).ok());
  return whole;
}

// A float64 factor kept of order n >= 20: a range that starts and ends inside rows (a download
// chunk) reads as those bytes of the whole factor, and a Cholesky's comes with zeros above the
// diagonal. Returns the whole factor.
inline Matrix ExpectRangeReadsAsTheWhole(const DeviceFactorization& kept, FactorizationKind kind) {
  const int64_t n = kept.rows();
  const Matrix whole = ReadWhole(kept);
  const uint64_t offset = 8 * (17 * n + 5);
  std::vector<std::byte> range(8 * (3 * n + 11));
  EXPECT_TRUE(kept.Read(offset, range).ok());
  EXPECT_EQ(std::memcmp(range.data(), whole.bytes() + offset, range.size()), 0);
  if (kind == FactorizationKind::kCholesky) {
    EXPECT_EQ(whole.As<double>()[1], 0.0);
  }
  return whole;
}

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_CORE_KEPT_FACTORIZATION_SUPPORT_H_
