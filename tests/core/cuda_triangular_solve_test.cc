// The triangular solves of core/cuda/triangular_solve.h against cuBLAS trsm with one and two
// right-hand sides (lower/upper, op N/H, unit/non-unit diagonal, lda > n, both block sizes, 0 to
// kMaxNearTiles near tiles, n around the blocks and beyond), and DeviceFactorSolves
// (core/cuda/factor_solves.h) against getrs and potrs on the same factors, and the inverted
// diagonal blocks against a host substitution. Entries the kernels must not read are NaN. Skips
// where there is no CUDA device.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_context.h"
#include "core/cuda/factor_solves.h"
#include "core/cuda/factorize_common.h"
#include "core/cuda/library_types.h"
#include "core/cuda/triangular_solve.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

template <typename T>
class CudaTriangularSolve : public CudaContextTest {};
using ElementTypes = ::testing::Types<float, double, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(CudaTriangularSolve, ElementTypes);

template <typename T>
constexpr bool kSingle = std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>;

// Relative max-norm error allowed against the library on the well-conditioned triangles below.
template <typename T>
constexpr double kTolerance = kSingle<T> ? 5e-5 : 1e-13;

template <typename T>
T Uniform(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  if constexpr (kIsComplex<T>) {
    const double re = uniform(rng);
    return T(re, uniform(rng));
  } else {
    return static_cast<T>(uniform(rng));
  }
}

template <typename T>
T Conjugate(T x) {
  if constexpr (kIsComplex<T>) {
    return std::conj(x);
  } else {
    return x;
  }
}

template <typename T>
std::vector<T> RandomVector(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = Uniform<T>(rng);
  return v;
}

// The column-major lda x n array of a well-conditioned triangle: off-diagonal entries uniform in
// [-1, 1] / n, diagonal entries with real part in [1, 2] (and imaginary part in [-0.5, 0.5]).
// Everything the solve must not read (the other triangle, rows n..lda-1, a unit diagonal) is NaN.
template <typename T>
std::vector<T> Triangle(int64_t n, int64_t lda, bool lower, bool unit, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const T nan = T(std::numeric_limits<double>::quiet_NaN());
  std::vector<T> a(static_cast<size_t>(lda * n), nan);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      T& x = a[static_cast<size_t>(i + j * lda)];
      if (i == j) {
        x = unit ? nan : Uniform<T>(rng) * T(0.5) + T(1.5);
      } else if ((i > j) == lower) {
        x = Uniform<T>(rng) / T(static_cast<double>(n));
      }
    }
  }
  return a;
}

// a with every NaN replaced by 0.
template <typename T>
std::vector<T> WithoutNaN(std::vector<T> a) {
  for (T& x : a) {
    if (std::isnan(std::abs(x))) x = T(0);
  }
  return a;
}

template <typename T>
absl::StatusOr<DeviceBuffer> UploadVector(DeviceContext& context, const std::vector<T>& host) {
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device, context.Allocate(host.size() * sizeof(T)));
  MATRIXD_RETURN_IF_ERROR(context.Upload(host.data(), device, host.size() * sizeof(T)));
  return device;
}

template <typename T>
std::vector<T> DownloadVector(DeviceContext& context, const DeviceBuffer& device, size_t size) {
  std::vector<T> host(size);
  const absl::Status status = context.Download(device, host.data(), size * sizeof(T));
  EXPECT_TRUE(status.ok()) << status;
  return host;
}

// max_i |x_i - want_i| / max_i |want_i|; NaN when any difference is NaN.
template <typename T>
double RelativeError(const std::vector<T>& x, const std::vector<T>& want) {
  double error = 0.0;
  double scale = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double difference = static_cast<double>(std::abs(x[i] - want[i]));
    if (std::isnan(difference)) return difference;  // std::max would drop it
    error = std::max(error, difference);
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
  }
  return scale > 0.0 ? error / scale : error;
}

TYPED_TEST(CudaTriangularSolve, MatchesCublasTrsmOnEveryTriangleAndOperation) {
  using T = TypeParam;
  using Traits = LibraryTraits<T>;
  DeviceContext& context = *this->context_;
  absl::StatusOr<DeviceBuffer> sync = context.Allocate(kTriangularSolveSyncBytes);
  ASSERT_TRUE(sync.ok()) << sync.status();
  // Zeroed once: every solve must leave it zero for the next (checked after each pair below).
  ASSERT_EQ(cudaMemsetAsync(sync->data(), 0, kTriangularSolveSyncBytes, context.stream()),
            cudaSuccess);
  const typename Traits::Device one = Traits::One();
  for (const int64_t n : {1, 63, 64, 65, 127, 128, 129, 1000, 4096}) {
    const int64_t lda = n + 3;
    for (const bool lower : {true, false}) {
      for (const bool unit : {false, true}) {
        const std::vector<T> a = Triangle<T>(n, lda, lower, unit, 7 + n);
        absl::StatusOr<DeviceBuffer> device_a = UploadVector(context, a);
        // cuBLAS gets zeros where ours gets NaN: the reference should not depend on how it
        // masks what it does not read.
        absl::StatusOr<DeviceBuffer> clean_a = UploadVector(context, WithoutNaN(a));
        ASSERT_TRUE(device_a.ok()) << device_a.status();
        ASSERT_TRUE(clean_a.ok()) << clean_a.status();
        const DeviceTriangle<T> triangle{.a = device_a->template as<const T>(),
                                         .n = n,
                                         .lda = lda,
                                         .lower = lower,
                                         .unit_diagonal = unit};
        for (const int block : {64, 128}) {
          absl::StatusOr<DeviceBuffer> inverse =
              context.Allocate(static_cast<size_t>(DiagonalInverseElements(n, block)) * sizeof(T));
          ASSERT_TRUE(inverse.ok()) << inverse.status();
          ASSERT_EQ(LaunchInvertDiagonalBlocks(triangle, block, inverse->template as<T>(),
                                               context.stream()),
                    cudaSuccess);
          for (const bool adjoint : {false, true}) {
            absl::StatusOr<DeviceBuffer> near = context.Allocate(
                static_cast<size_t>(NearTileElements(n, block, kMaxNearTiles)) * sizeof(T));
            ASSERT_TRUE(near.ok()) << near.status();
            ASSERT_EQ(
                ComputeNearTiles(context.cublas(), triangle, block, inverse->template as<const T>(),
                                 adjoint, kMaxNearTiles, near->template as<T>()),
                CUBLAS_STATUS_SUCCESS);
            for (int near_count = 0; near_count <= kMaxNearTiles; ++near_count) {
              SCOPED_TRACE(::testing::Message()
                           << "n=" << n << " lower=" << lower << " unit=" << unit << " block="
                           << block << " adjoint=" << adjoint << " near=" << near_count);
              const std::vector<T> b = RandomVector<T>(n, 100 + n);
              absl::StatusOr<DeviceBuffer> device_b = UploadVector(context, b);
              absl::StatusOr<DeviceBuffer> x = context.Allocate(b.size() * sizeof(T));
              absl::StatusOr<DeviceBuffer> in_place = UploadVector(context, b);
              absl::StatusOr<DeviceBuffer> reference = UploadVector(context, b);
              ASSERT_TRUE(device_b.ok() && x.ok() && in_place.ok() && reference.ok());
              const T* inv = inverse->template as<const T>();
              const T* near_tiles = near->template as<const T>();
              ASSERT_EQ(
                  LaunchTriangularSolve(triangle, block, inv, adjoint,
                                        device_b->template as<const T>(), x->template as<T>(),
                                        sync->data(), context.stream(), near_tiles, near_count),
                  cudaSuccess);
              ASSERT_EQ(LaunchTriangularSolve(triangle, block, inv, adjoint,
                                              in_place->template as<const T>(),
                                              in_place->template as<T>(), sync->data(),
                                              context.stream(), near_tiles, near_count),
                        cudaSuccess);
              // cuBLAS trsm in place on `columns` right-hand sides at `rhs`: the reference.
              const auto reference_trsm = [&](DeviceBuffer& rhs, int columns) {
                return Traits::trsm(context.cublas(), CUBLAS_SIDE_LEFT,
                                    lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER,
                                    adjoint ? Traits::kAdjoint : CUBLAS_OP_N,
                                    unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT,
                                    static_cast<int>(n), columns, &one,
                                    LibraryPointer<T>(clean_a->data()), static_cast<int>(lda),
                                    LibraryPointer<T>(rhs.data()), static_cast<int>(n));
              };
              ASSERT_EQ(reference_trsm(*reference, 1), CUBLAS_STATUS_SUCCESS);
              const std::vector<T> got = DownloadVector<T>(context, *x, b.size());
              const std::vector<T> got_in_place = DownloadVector<T>(context, *in_place, b.size());
              const std::vector<T> want = DownloadVector<T>(context, *reference, b.size());
              EXPECT_LE(RelativeError(got, want), kTolerance<T>);
              // A fixed order of operations: in place or not, and run again, the same bits.
              EXPECT_EQ(got_in_place, got);

              // Two right-hand sides [c, b] in one solve (in place): within the bound of trsm
              // with both, and b's column the same bits as its solve alone.
              std::vector<T> pair = RandomVector<T>(n, 200 + n);
              pair.insert(pair.end(), b.begin(), b.end());
              absl::StatusOr<DeviceBuffer> device_pair = UploadVector(context, pair);
              absl::StatusOr<DeviceBuffer> pair_reference = UploadVector(context, pair);
              ASSERT_TRUE(device_pair.ok() && pair_reference.ok());
              ASSERT_EQ(LaunchTriangularSolve(
                            triangle, block, inv, adjoint, device_pair->template as<const T>(),
                            device_pair->template as<T>(), sync->data(), context.stream(),
                            near_tiles, near_count, kMaxTriangularSolveColumns),
                        cudaSuccess);
              ASSERT_EQ(reference_trsm(*pair_reference, 2), CUBLAS_STATUS_SUCCESS);
              const std::vector<T> got_pair = DownloadVector<T>(context, *device_pair, pair.size());
              EXPECT_LE(
                  RelativeError(got_pair, DownloadVector<T>(context, *pair_reference, pair.size())),
                  kTolerance<T>);
              EXPECT_EQ(std::vector<T>(got_pair.begin() + n, got_pair.end()), got);

              // Any cluster (none, one that does not divide the row blocks, past the portable
              // 8): the same bits as the default's.
              for (const int cluster : {1, 3, kMaxTriangularSolveCluster}) {
                SCOPED_TRACE(::testing::Message() << "cluster=" << cluster);
                absl::StatusOr<DeviceBuffer> clustered = context.Allocate(b.size() * sizeof(T));
                ASSERT_TRUE(clustered.ok()) << clustered.status();
                ASSERT_EQ(LaunchTriangularSolve(
                              triangle, block, inv, adjoint, device_b->template as<const T>(),
                              clustered->template as<T>(), sync->data(), context.stream(),
                              near_tiles, near_count, 1, cluster),
                          cudaSuccess);
                EXPECT_EQ(DownloadVector<T>(context, *clustered, b.size()), got);
              }
              const std::vector<unsigned> counters = DownloadVector<unsigned>(
                  context, *sync, kTriangularSolveSyncBytes / sizeof(unsigned));
              EXPECT_EQ(counters, std::vector<unsigned>(counters.size(), 0u));
            }
          }
        }
      }
    }
  }
}

// Triangle() with badly scaled rows and columns: entry (i, k) times f_i g_k, f and g powers of
// ten spread over 10^+-kExponent (g = 1 / f for a unit diagonal, so that its inverse stays
// within range: S L S^-1).
template <typename T>
std::vector<T> BadlyScaledTriangle(int64_t n, int64_t lda, bool lower, bool unit, uint64_t seed) {
  constexpr double kExponent = kSingle<T> ? 3.0 : 6.0;
  std::vector<T> a = Triangle<T>(n, lda, lower, unit, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> exponent(-kExponent, kExponent);
  std::vector<double> f(static_cast<size_t>(n));
  std::vector<double> g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    f[i] = std::pow(10.0, exponent(rng));
    g[i] = unit ? 1.0 / f[i] : std::pow(10.0, exponent(rng));
  }
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t i = 0; i < n; ++i) a[i + k * lda] *= T(f[i] * g[k]);  // NaN stays NaN
  }
  return a;
}

// The inverse of the triangle's diagonal block at row `first` (`rows` rows), by substitution in
// long double, column-major with leading dimension rows.
template <typename T>
using Wide = std::conditional_t<kIsComplex<T>, std::complex<long double>, long double>;
template <typename T>
std::vector<Wide<T>> HostBlockInverse(const std::vector<T>& a, int64_t lda, bool lower, bool unit,
                                      int64_t first, int rows) {
  const auto entry = [&](int i, int k) -> Wide<T> {
    if (i == k && unit) return Wide<T>(1);
    return Wide<T>(a[static_cast<size_t>(first + i + (first + k) * lda)]);
  };
  std::vector<Wide<T>> w(static_cast<size_t>(rows) * rows, Wide<T>(0));
  for (int j = 0; j < rows; ++j) {
    Wide<T>* y = w.data() + static_cast<size_t>(j) * rows;
    if (lower) {
      for (int i = j; i < rows; ++i) {
        Wide<T> s = i == j ? Wide<T>(1) : Wide<T>(0);
        for (int k = j; k < i; ++k) s -= entry(i, k) * y[k];
        y[i] = s / entry(i, i);
      }
    } else {
      for (int i = j; i >= 0; --i) {
        Wide<T> s = i == j ? Wide<T>(1) : Wide<T>(0);
        for (int k = i + 1; k <= j; ++k) s -= entry(i, k) * y[k];
        y[i] = s / entry(i, i);
      }
    }
  }
  return w;
}

// Every diagonal block's inverse against HostBlockInverse, entry by entry, within the
// componentwise bound of substitution (Higham, Accuracy and Stability of Numerical Algorithms,
// section 14.2: |X^ - X| <= c_n u |X| |D| |X|), exact zeros outside the triangle and the block.
// Returns the number of entries out of bounds; the first is reported.
template <typename T>
int CheckDiagonalInverses(const std::vector<T>& a, int64_t n, int64_t lda, bool lower, bool unit,
                          int block, const std::vector<T>& got) {
  const double bound = 8.0 * block * std::numeric_limits<decltype(std::abs(T()))>::epsilon();
  int bad = 0;
  for (int64_t first = 0; first < n; first += block) {
    const int rows = static_cast<int>(std::min<int64_t>(block, n - first));
    const std::vector<Wide<T>> w = HostBlockInverse(a, lda, lower, unit, first, rows);
    // |W| |D| |W|.
    std::vector<double> abs_d(static_cast<size_t>(rows) * rows, 0.0);
    std::vector<double> abs_w(abs_d.size());
    for (int k = 0; k < rows; ++k) {
      for (int i = 0; i < rows; ++i) {
        const size_t at = static_cast<size_t>(i + k * rows);
        abs_w[at] = static_cast<double>(std::abs(w[at]));
        if (i == k) {
          abs_d[at] = unit ? 1.0 : static_cast<double>(std::abs(a[first + i + (first + k) * lda]));
        } else if ((i > k) == lower) {
          abs_d[at] = static_cast<double>(std::abs(a[first + i + (first + k) * lda]));
        }
      }
    }
    std::vector<double> dw(abs_d.size(), 0.0);  // |D| |W|
    std::vector<double> wdw(abs_d.size(), 0.0);
    for (int j = 0; j < rows; ++j) {
      for (int k = 0; k < rows; ++k) {
        const double x = abs_w[k + j * rows];
        if (x == 0.0) continue;
        for (int i = 0; i < rows; ++i) dw[i + j * rows] += abs_d[i + k * rows] * x;
      }
      for (int k = 0; k < rows; ++k) {
        const double x = dw[k + j * rows];
        if (x == 0.0) continue;
        for (int i = 0; i < rows; ++i) wdw[i + j * rows] += abs_w[i + k * rows] * x;
      }
    }
    const T* tile = got.data() + first / block * block * block;
    for (int j = 0; j < block; ++j) {
      for (int i = 0; i < block; ++i) {
        const T x = tile[i + j * block];
        bool ok = false;
        double error = 0.0;
        double limit = 0.0;
        if (i < rows && j < rows && (i == j || (i > j) == lower)) {
          const size_t at = static_cast<size_t>(i + j * rows);
          error = static_cast<double>(std::abs(Wide<T>(x) - w[at]));
          limit = bound * wdw[at];
          ok = error <= limit;
        } else {
          ok = x == T(0);
          error = static_cast<double>(std::abs(x));
        }
        if (!ok && bad++ == 0) {
          ADD_FAILURE() << "block at row " << first << " (" << rows << " rows), entry (" << i
                        << ", " << j << "): error " << error << ", bound " << limit;
        }
      }
    }
  }
  return bad;
}

// LaunchInvertDiagonalBlocks with two triangles in one launch (a lower and an upper one, one of
// them with a unit diagonal, as LU's), full and partial last blocks, well and badly scaled.
TYPED_TEST(CudaTriangularSolve, DiagonalInversesMatchAHostSubstitution) {
  using T = TypeParam;
  DeviceContext& context = *this->context_;
  for (const int64_t n : {1, 63, 64, 65, 129, 200, 300}) {
    const int64_t lda = n + 3;
    for (const bool scaled : {false, true}) {
      for (const bool lower_unit : {true, false}) {
        const bool units[2] = {lower_unit, !lower_unit};
        std::vector<T> hosts[2];
        absl::StatusOr<DeviceBuffer> devices[2];
        DeviceTriangle<T> triangles[2];
        for (int t = 0; t < 2; ++t) {
          const bool lower = t == 0;
          const uint64_t seed = 31 + n + 2 * t + (scaled ? 1000 : 0);
          hosts[t] = scaled ? BadlyScaledTriangle<T>(n, lda, lower, units[t], seed)
                            : Triangle<T>(n, lda, lower, units[t], seed);
          devices[t] = UploadVector(context, hosts[t]);
          ASSERT_TRUE(devices[t].ok()) << devices[t].status();
          triangles[t] = {.a = devices[t]->template as<const T>(),
                          .n = n,
                          .lda = lda,
                          .lower = lower,
                          .unit_diagonal = units[t]};
        }
        for (const int block : {64, 128}) {
          SCOPED_TRACE(::testing::Message() << "n=" << n << " scaled=" << scaled
                                            << " lower unit=" << lower_unit << " block=" << block);
          const size_t elements = static_cast<size_t>(DiagonalInverseElements(n, block));
          absl::StatusOr<DeviceBuffer> inverses[2] = {context.Allocate(elements * sizeof(T)),
                                                      context.Allocate(elements * sizeof(T))};
          ASSERT_TRUE(inverses[0].ok() && inverses[1].ok());
          // NaN first: every element must be written.
          const std::vector<T> nan(elements, T(std::numeric_limits<double>::quiet_NaN()));
          T* outs[2];
          for (int t = 0; t < 2; ++t) {
            ASSERT_TRUE(context.Upload(nan.data(), *inverses[t], elements * sizeof(T)).ok());
            outs[t] = inverses[t]->template as<T>();
          }
          ASSERT_EQ(LaunchInvertDiagonalBlocks(std::span<const DeviceTriangle<T>>(triangles), block,
                                               std::span<T* const>(outs), context.stream()),
                    cudaSuccess);
          for (int t = 0; t < 2; ++t) {
            SCOPED_TRACE(t == 0 ? "lower" : "upper");
            const std::vector<T> got = DownloadVector<T>(context, *inverses[t], elements);
            EXPECT_EQ(CheckDiagonalInverses(hosts[t], n, lda, t == 0, units[t], block, got), 0);
          }
        }
      }
    }
  }
}

// A zero on the diagonal: x becomes Inf/NaN from that row block on, and the solve still runs to
// the end (blocks hand non-finite values on like any other) and leaves its counters zero.
TYPED_TEST(CudaTriangularSolve, ZeroPivotGivesNonFiniteRowsAndStillCompletes) {
  using T = TypeParam;
  DeviceContext& context = *this->context_;
  constexpr int64_t kOrder = 300;
  constexpr int64_t kZeroRow = 150;
  std::vector<T> a = WithoutNaN(Triangle<T>(kOrder, kOrder, /*lower=*/true, false, 11));
  a[static_cast<size_t>(kZeroRow + kZeroRow * kOrder)] = T(0);
  absl::StatusOr<DeviceBuffer> device_a = UploadVector(context, a);
  ASSERT_TRUE(device_a.ok()) << device_a.status();
  const DeviceTriangle<T> triangle{
      .a = device_a->template as<const T>(), .n = kOrder, .lda = kOrder, .lower = true};
  absl::StatusOr<DeviceBuffer> sync = context.Allocate(kTriangularSolveSyncBytes);
  ASSERT_TRUE(sync.ok()) << sync.status();
  ASSERT_EQ(cudaMemsetAsync(sync->data(), 0, kTriangularSolveSyncBytes, context.stream()),
            cudaSuccess);
  constexpr int kBlock = 64;
  absl::StatusOr<DeviceBuffer> inverse =
      context.Allocate(static_cast<size_t>(DiagonalInverseElements(kOrder, kBlock)) * sizeof(T));
  absl::StatusOr<DeviceBuffer> near = context.Allocate(
      static_cast<size_t>(NearTileElements(kOrder, kBlock, kMaxNearTiles)) * sizeof(T));
  ASSERT_TRUE(inverse.ok() && near.ok());
  ASSERT_EQ(
      LaunchInvertDiagonalBlocks(triangle, kBlock, inverse->template as<T>(), context.stream()),
      cudaSuccess);
  for (const bool adjoint : {false, true}) {
    ASSERT_EQ(ComputeNearTiles(context.cublas(), triangle, kBlock, inverse->template as<const T>(),
                               adjoint, kMaxNearTiles, near->template as<T>()),
              CUBLAS_STATUS_SUCCESS);
    for (const int near_count : {0, kMaxNearTiles}) {
      SCOPED_TRACE(::testing::Message() << "adjoint=" << adjoint << " near=" << near_count);
      absl::StatusOr<DeviceBuffer> x = UploadVector(context, RandomVector<T>(kOrder, 5));
      ASSERT_TRUE(x.ok());
      ASSERT_EQ(LaunchTriangularSolve(triangle, kBlock, inverse->template as<const T>(), adjoint,
                                      x->template as<const T>(), x->template as<T>(), sync->data(),
                                      context.stream(), near->template as<const T>(), near_count),
                cudaSuccess);
      const std::vector<T> got = DownloadVector<T>(context, *x, kOrder);
      // L x = b solves rows first to last, L^H x = b last to first: the rows solved before the
      // zero's 64-row block are finite, the zero's own row is not.
      for (int64_t i = 0; i < kOrder; ++i) {
        const bool before =
            adjoint ? i >= (kZeroRow / kBlock + 1) * kBlock : i < kZeroRow / kBlock * kBlock;
        if (before) {
          EXPECT_TRUE(std::isfinite(std::abs(got[static_cast<size_t>(i)]))) << "row " << i;
        }
      }
      EXPECT_FALSE(std::isfinite(std::abs(got[kZeroRow])));
      const std::vector<unsigned> counters =
          DownloadVector<unsigned>(context, *sync, kTriangularSolveSyncBytes / sizeof(unsigned));
      EXPECT_EQ(counters, std::vector<unsigned>(counters.size(), 0u));
    }
  }
}

TYPED_TEST(CudaTriangularSolve, RefusesABlockItHasNoShapeFor) {
  using T = TypeParam;
  DeviceContext& context = *this->context_;
  const DeviceTriangle<T> triangle{.a = nullptr, .n = 10, .lda = 10};
  EXPECT_EQ(LaunchInvertDiagonalBlocks<T>(triangle, 32, nullptr, context.stream()),
            cudaErrorInvalidValue);
  EXPECT_EQ(LaunchTriangularSolve<T>(triangle, 96, nullptr, false, nullptr, nullptr, nullptr,
                                     context.stream()),
            cudaErrorInvalidValue);
  // Right-hand sides: 1 to kMaxTriangularSolveColumns.
  for (const int columns : {0, kMaxTriangularSolveColumns + 1}) {
    EXPECT_EQ(LaunchTriangularSolve<T>(triangle, 64, nullptr, false, nullptr, nullptr, nullptr,
                                       context.stream(), nullptr, 0, columns),
              cudaErrorInvalidValue);
  }
  // Near tiles: at most kMaxNearTiles, and given when asked for.
  EXPECT_EQ(LaunchTriangularSolve<T>(triangle, 64, nullptr, false, nullptr, nullptr, nullptr,
                                     context.stream(), nullptr, 1),
            cudaErrorInvalidValue);
  // Clusters: 1 to kMaxTriangularSolveCluster blocks.
  for (const int cluster : {0, kMaxTriangularSolveCluster + 1}) {
    EXPECT_EQ(LaunchTriangularSolve<T>(triangle, 64, nullptr, false, nullptr, nullptr, nullptr,
                                       context.stream(), nullptr, 0, 1, cluster),
              cudaErrorInvalidValue);
  }
  EXPECT_EQ(ComputeNearTiles<T>(context.cublas(), triangle, 64, nullptr, false, kMaxNearTiles + 1,
                                nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(ComputeNearTiles<T>(context.cublas(), triangle, 96, nullptr, false, 1, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
}

// An LU's four near-tile sets (L and U, op N and H) computed together, as DeviceFactorSolves
// does, against each set computed alone, for both blocks, orders with and without a cut last
// block, a leading dimension wider than the order, and (n = 4200 with 64-row blocks: 520
// products) more products than are batched together.
TYPED_TEST(CudaTriangularSolve, NearTileSetsAreEachSetsTilesAlone) {
  using T = TypeParam;
  DeviceContext& context = *this->context_;
  for (const int block : {64, 128}) {
    for (const int64_t n : {int64_t{1}, int64_t{200}, int64_t{300}, int64_t{512}, int64_t{4200}}) {
      if (n == 4200 && block != 64) continue;
      SCOPED_TRACE(::testing::Message() << "block=" << block << " n=" << n);
      const int64_t lda = n + 5;
      std::vector<T> a = RandomVector<T>(lda * n, 31 + n);
      for (int64_t i = 0; i < n; ++i) a[static_cast<size_t>(i + i * lda)] += T(4);
      absl::StatusOr<DeviceBuffer> device_a = UploadVector(context, a);
      ASSERT_TRUE(device_a.ok()) << device_a.status();
      const auto elements = static_cast<size_t>(DiagonalInverseElements(n, block));
      const auto near_elements = static_cast<size_t>(NearTileElements(n, block, kMaxNearTiles));
      std::vector<NearTileSet<T>> sets;
      std::vector<DeviceBuffer> buffers;  // inverses, then each set's tiles together and alone
      for (const bool lower : {true, false}) {
        const DeviceTriangle<T> triangle{.a = device_a->template as<const T>(),
                                         .n = n,
                                         .lda = lda,
                                         .lower = lower,
                                         .unit_diagonal = lower};
        absl::StatusOr<DeviceBuffer> inverse = context.Allocate(elements * sizeof(T));
        ASSERT_TRUE(inverse.ok());
        ASSERT_EQ(LaunchInvertDiagonalBlocks(triangle, block, inverse->template as<T>(),
                                             context.stream()),
                  cudaSuccess);
        for (const bool adjoint : {false, true}) {
          absl::StatusOr<DeviceBuffer> together = context.Allocate(near_elements * sizeof(T));
          ASSERT_TRUE(together.ok());
          ASSERT_EQ(
              cudaMemsetAsync(together->data(), 0, near_elements * sizeof(T), context.stream()),
              cudaSuccess);
          sets.push_back({.triangle = triangle,
                          .inverse = inverse->template as<const T>(),
                          .adjoint = adjoint,
                          .near_tiles = together->template as<T>()});
          buffers.push_back(*std::move(together));
        }
        buffers.push_back(*std::move(inverse));
      }
      absl::StatusOr<DeviceBuffer> pointers = context.Allocate(static_cast<size_t>(
          NearTileSetPointerBytes(n, block, kMaxNearTiles, static_cast<int>(sets.size()))));
      ASSERT_TRUE(pointers.ok());
      ASSERT_EQ(ComputeNearTileSets(context.cublas(), std::span<const NearTileSet<T>>(sets), block,
                                    kMaxNearTiles, pointers->data(), context.stream()),
                CUBLAS_STATUS_SUCCESS);
      for (const NearTileSet<T>& set : sets) {
        SCOPED_TRACE(::testing::Message()
                     << "lower=" << set.triangle.lower << " adjoint=" << set.adjoint);
        absl::StatusOr<DeviceBuffer> alone = context.Allocate(near_elements * sizeof(T));
        ASSERT_TRUE(alone.ok());
        ASSERT_EQ(cudaMemsetAsync(alone->data(), 0, near_elements * sizeof(T), context.stream()),
                  cudaSuccess);
        ASSERT_EQ(ComputeNearTiles(context.cublas(), set.triangle, block, set.inverse, set.adjoint,
                                   kMaxNearTiles, alone->template as<T>()),
                  CUBLAS_STATUS_SUCCESS);
        const std::vector<T> want = DownloadVector<T>(context, *alone, near_elements);
        absl::StatusOr<DeviceBuffer> got_buffer = context.Allocate(near_elements * sizeof(T));
        ASSERT_TRUE(got_buffer.ok());
        ASSERT_EQ(cudaMemcpyAsync(got_buffer->data(), set.near_tiles, near_elements * sizeof(T),
                                  cudaMemcpyDeviceToDevice, context.stream()),
                  cudaSuccess);
        const std::vector<T> got = DownloadVector<T>(context, *got_buffer, near_elements);
        double largest = 0.0;
        double difference = 0.0;
        for (size_t i = 0; i < near_elements; ++i) {
          largest = std::max(largest, static_cast<double>(std::abs(want[i])));
          difference = std::max(difference, static_cast<double>(std::abs(got[i] - want[i])));
        }
        EXPECT_LE(difference, kTolerance<T> * largest);
        if (n > block) {
          EXPECT_GT(largest, 0.0);  // tiles were written
        }
      }
    }
  }
  EXPECT_EQ(ComputeNearTileSets<T>(context.cublas(), {}, 96, 1, nullptr, context.stream()),
            CUBLAS_STATUS_INVALID_VALUE);
}

// getrf and potrf factors of random matrices, solved by DeviceFactorSolves (without and with near
// tiles) and by cuSOLVER.
TYPED_TEST(CudaTriangularSolve, FactorSolvesMatchGetrsAndPotrs) {
  using T = TypeParam;
  using Traits = LibraryTraits<T>;
  DeviceContext& context = *this->context_;
  const double tolerance = kSingle<T> ? 5e-3 : 1e-10;
  // Three: one chain of two columns, then one of one.
  constexpr int kColumns = kMaxTriangularSolveColumns + 1;
  for (const int n : {1, 65, 1000}) {
    // LU of a matrix with entries uniform in [-1, 1] (rows are swapped).
    const std::vector<T> a = RandomVector<T>(static_cast<int64_t>(n) * n, 3 + n);
    // Hermitian positive definite by Gershgorin: (M + M^H) / (2 n) + 2 I.
    std::vector<T> spd(a.size());
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        spd[i + j * n] =
            (a[i + j * n] + Conjugate(a[j + i * n])) / T(2.0 * n) + (i == j ? T(2) : T(0));
      }
    }
    absl::StatusOr<DeviceBuffer> lu = UploadVector(context, a);
    absl::StatusOr<DeviceBuffer> cholesky = UploadVector(context, spd);
    absl::StatusOr<DeviceBuffer> ints = context.Allocate(sizeof(int) * (n + 1));
    ASSERT_TRUE(lu.ok() && cholesky.ok() && ints.ok());
    int* ipiv = ints->template as<int>();
    int* info = ipiv + n;
    int lu_elements = 0;
    int cholesky_elements = 0;
    ASSERT_EQ(Traits::getrf_buffer_size(context.cusolver(), n, n, LibraryPointer<T>(lu->data()), n,
                                        &lu_elements),
              CUSOLVER_STATUS_SUCCESS);
    ASSERT_EQ(Traits::potrf_buffer_size(context.cusolver(), CUBLAS_FILL_MODE_UPPER, n,
                                        LibraryPointer<T>(cholesky->data()), n, &cholesky_elements),
              CUSOLVER_STATUS_SUCCESS);
    absl::StatusOr<DeviceBuffer> workspace =
        context.Allocate(sizeof(T) * std::max({lu_elements, cholesky_elements, 1}));
    ASSERT_TRUE(workspace.ok());
    ASSERT_EQ(Traits::getrf(context.cusolver(), n, n, LibraryPointer<T>(lu->data()), n,
                            LibraryPointer<T>(workspace->data()), ipiv, info),
              CUSOLVER_STATUS_SUCCESS);
    ASSERT_EQ(Traits::potrf(context.cusolver(), CUBLAS_FILL_MODE_UPPER, n,
                            LibraryPointer<T>(cholesky->data()), n,
                            LibraryPointer<T>(workspace->data()), cholesky_elements, info),
              CUSOLVER_STATUS_SUCCESS);
    std::vector<int> pivots(static_cast<size_t>(n));
    ASSERT_TRUE(context.Download(*ints, pivots.data(), pivots.size() * sizeof(int)).ok());

    for (const int near : {0, kDefaultNearTiles}) {
      absl::StatusOr<DeviceFactorSolves<T>> lu_solves =
          DeviceFactorSolves<T>::Lu(context, lu->template as<const T>(), n, n, pivots);
      ASSERT_TRUE(lu_solves.ok()) << lu_solves.status();
      absl::StatusOr<DeviceFactorSolves<T>> cholesky_solves =
          DeviceFactorSolves<T>::Cholesky(context, cholesky->template as<const T>(), n, n);
      ASSERT_TRUE(cholesky_solves.ok()) << cholesky_solves.status();
      lu_solves->set_near_tiles(near);
      cholesky_solves->set_near_tiles(near);
      for (const bool adjoint : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "n=" << n << " near=" << near << " adjoint=" << adjoint);
        const std::vector<T> b = RandomVector<T>(static_cast<int64_t>(n) * kColumns, 50 + n);
        absl::StatusOr<DeviceBuffer> x = UploadVector(context, b);
        absl::StatusOr<DeviceBuffer> want = UploadVector(context, b);
        ASSERT_TRUE(x.ok() && want.ok());
        ASSERT_TRUE(lu_solves->Apply(adjoint, x->data(), kColumns).ok());
        ASSERT_EQ(Traits::getrs(context.cusolver(), adjoint ? Traits::kAdjoint : CUBLAS_OP_N, n,
                                kColumns, LibraryPointer<T>(lu->data()), n, ipiv,
                                LibraryPointer<T>(want->data()), n, info),
                  CUSOLVER_STATUS_SUCCESS);
        EXPECT_LE(RelativeError(DownloadVector<T>(context, *x, b.size()),
                                DownloadVector<T>(context, *want, b.size())),
                  tolerance)
            << "LU";

        ASSERT_TRUE(context.Upload(b.data(), *x, b.size() * sizeof(T)).ok());
        ASSERT_TRUE(context.Upload(b.data(), *want, b.size() * sizeof(T)).ok());
        ASSERT_TRUE(cholesky_solves->Apply(adjoint, x->data(), kColumns).ok());
        ASSERT_EQ(Traits::potrs(context.cusolver(), CUBLAS_FILL_MODE_UPPER, n, kColumns,
                                LibraryPointer<T>(cholesky->data()), n,
                                LibraryPointer<T>(want->data()), n, info),
                  CUSOLVER_STATUS_SUCCESS);
        EXPECT_LE(RelativeError(DownloadVector<T>(context, *x, b.size()),
                                DownloadVector<T>(context, *want, b.size())),
                  tolerance)
            << "Cholesky";
      }
    }
  }
}

TYPED_TEST(CudaTriangularSolve, PivotsOutOfRangeAreRefused) {
  using T = TypeParam;
  DeviceContext& context = *this->context_;
  const std::vector<int> short_pivots = {1, 2};
  EXPECT_EQ(DeviceFactorSolves<T>::Lu(context, nullptr, 3, 3, short_pivots).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<int> backwards = {2, 1, 3};  // row 1 may swap only with rows 1..2
  const absl::Status status = DeviceFactorSolves<T>::Lu(context, nullptr, 3, 3, backwards).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "pivots[1] is 1, want it in [2, 3]");
}

}  // namespace
}  // namespace matrixd::cuda
