// The fused one-piece products of the GPU's modular LU (core/cuda/fused_modular_product.h), on a
// device: C := Reduce(C - A B) mod p and B := Reduce(D^-1 B) (a leaf inverse in two pieces)
// against the same in exact int64 arithmetic on the host, and bit for bit against the DGEMM and
// reduction each replaces; ragged tiles, odd offsets and orders, depths that are no multiple of
// the kernel's chunk, sums at the 2^53 bound, a matrix already found singular (left alone) and
// empty blocks. Skips without a device.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/balanced_residue.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/fused_modular_product.h"
#include "core/cuda/modular_lu_kernels.h"
#include "core/cuda/scoped_math_mode.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

// The balanced residue of x mod p (|result| <= p / 2), exactly.
int64_t Balanced(int64_t x, int64_t p) {
  int64_t r = x % p;
  if (r < 0) r += p;
  return r > p / 2 ? r - p : r;
}

struct Case {
  int64_t n;
  FusedProductBlocks blocks;
  bool at_bound;  // every entry of A and B at p / 2: each sum of products at its largest
};

// A batch of `primes.size()` n x n matrices of balanced residues on the device, with their moduli
// and states, and a host copy.
class DeviceBatch {
 public:
  static absl::StatusOr<DeviceBatch> Create(DeviceContext& context, int64_t n,
                                            const std::vector<int64_t>& primes, bool at_bound,
                                            uint64_t seed) {
    DeviceBatch batch;
    batch.n_ = n;
    batch.primes_ = primes;
    std::mt19937_64 rng(seed);
    batch.host_.resize(static_cast<size_t>(n * n) * primes.size());
    for (size_t b = 0; b < primes.size(); ++b) {
      const int64_t half = primes[b] / 2;
      std::uniform_int_distribution<int64_t> entry(-half, half);
      for (int64_t e = 0; e < n * n; ++e) {
        batch.host_[b * n * n + e] =
            static_cast<double>(at_bound ? ((e % 3 == 0) ? -half : half) : entry(rng));
      }
    }
    std::vector<BalancedModulus> moduli;
    for (const int64_t p : primes) moduli.push_back(BalancedModulus::Of(static_cast<uint64_t>(p)));
    std::vector<ModularLuState> states(primes.size(), ModularLuState{1.0, 0});
    MATRIXD_ASSIGN_OR_RETURN(batch.matrices_,
                             context.Allocate(batch.host_.size() * sizeof(double)));
    MATRIXD_ASSIGN_OR_RETURN(batch.moduli_, context.Allocate(moduli.size() * sizeof(moduli[0])));
    MATRIXD_ASSIGN_OR_RETURN(batch.states_, context.Allocate(states.size() * sizeof(states[0])));
    MATRIXD_RETURN_IF_ERROR(
        context.Upload(batch.host_.data(), *batch.matrices_, batch.host_.size() * sizeof(double)));
    MATRIXD_RETURN_IF_ERROR(
        context.Upload(moduli.data(), *batch.moduli_, moduli.size() * sizeof(moduli[0])));
    MATRIXD_RETURN_IF_ERROR(
        context.Upload(states.data(), *batch.states_, states.size() * sizeof(states[0])));
    return batch;
  }

  ResidueBatch view() {
    return ResidueBatch{.a = matrices_->as<double>(),
                        .n = n_,
                        .count = static_cast<int>(primes_.size()),
                        .moduli = moduli_->as<BalancedModulus>(),
                        .states = states_->as<ModularLuState>()};
  }
  const std::vector<double>& host() const { return host_; }
  absl::StatusOr<std::vector<double>> Download(DeviceContext& context) {
    std::vector<double> out(host_.size());
    MATRIXD_RETURN_IF_ERROR(context.Download(*matrices_, out.data(), out.size() * sizeof(double)));
    return out;
  }
  absl::Status MarkSingular(DeviceContext& context, int b) {
    std::vector<ModularLuState> states(primes_.size(), ModularLuState{1.0, 0});
    states[static_cast<size_t>(b)] = ModularLuState{0.0, 1};
    return context.Upload(states.data(), *states_, states.size() * sizeof(states[0]));
  }

  // The update on the host copy, in int64 (every sum below 2^53 < 2^63).
  std::vector<double> Expected(const FusedProductBlocks& t, int skipped) const {
    std::vector<double> out = host_;
    for (size_t b = 0; b < primes_.size(); ++b) {
      if (static_cast<int>(b) == skipped) continue;
      const double* m = host_.data() + b * n_ * n_;
      for (int64_t i = 0; i < t.rows; ++i) {
        for (int64_t j = 0; j < t.cols; ++j) {
          int64_t x = static_cast<int64_t>(m[t.c_offset + i * n_ + j]);
          for (int64_t k = 0; k < t.depth; ++k) {
            x -= static_cast<int64_t>(m[t.a_offset + i * n_ + k]) *
                 static_cast<int64_t>(m[t.b_offset + k * n_ + j]);
          }
          out[b * n_ * n_ + t.c_offset + i * n_ + j] = static_cast<double>(Balanced(x, primes_[b]));
        }
      }
    }
    return out;
  }

 private:
  int64_t n_ = 0;
  std::vector<int64_t> primes_;
  std::vector<double> host_;
  std::optional<DeviceBuffer> matrices_;
  std::optional<DeviceBuffer> moduli_;
  std::optional<DeviceBuffer> states_;
};

class CudaFusedModularProduct : public CudaContextTest {};

// Primes of [2^23, 2^24), the largest below 2^24 among them (the one-piece bound at depth 128).
const std::vector<int64_t> kPrimes = {16777213, 8388617, 12582917, 16777199};

// A at (o + depth, o), B at (o, o + depth), C at (o + depth, o + depth): disjoint, as in a trailing
// update below and right of a panel.
FusedProductBlocks TrailingBlocks(int64_t n, int64_t o, int64_t depth, int64_t rows, int64_t cols) {
  return FusedProductBlocks{.a_offset = (o + depth) * n + o,
                            .b_offset = o * n + o + depth,
                            .c_offset = (o + depth) * n + o + depth,
                            .rows = rows,
                            .cols = cols,
                            .depth = depth};
}

TEST_F(CudaFusedModularProduct, MatchesExactIntegersOnRaggedAndBoundaryShapes) {
  const std::vector<Case> cases = {
      {300, TrailingBlocks(300, 0, 128, 172, 172), false},  // a trailing update, ragged tiles
      {257, TrailingBlocks(257, 3, 37, 217, 201), false},   // odd order, offsets and depth
      {200, TrailingBlocks(200, 0, 128, 72, 72), true},     // sums at the 2^53 bound
      {130, TrailingBlocks(130, 1, 1, 128, 1), false},      // depth 1, one column
      {96, TrailingBlocks(96, 0, 64, 32, 32), false},       // one tile, half of it empty
  };
  for (const Case& t : cases) {
    SCOPED_TRACE(::testing::Message() << "n=" << t.n << " rows=" << t.blocks.rows
                                      << " cols=" << t.blocks.cols << " depth=" << t.blocks.depth);
    absl::StatusOr<DeviceBatch> batch =
        DeviceBatch::Create(*context_, t.n, kPrimes, t.at_bound, 17 + t.n);
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_TRUE(LaunchFusedSubtractProduct(context_->stream(), batch->view(), t.blocks).ok());
    absl::StatusOr<std::vector<double>> got = batch->Download(*context_);
    ASSERT_TRUE(got.ok()) << got.status();
    const std::vector<double> want = batch->Expected(t.blocks, /*skipped=*/-1);
    ASSERT_EQ(got->size(), want.size());
    int64_t wrong = 0;
    for (size_t e = 0; e < want.size(); ++e) wrong += (*got)[e] != want[e];
    EXPECT_EQ(wrong, 0);
    EXPECT_NE(*got, batch->host()) << "nothing was computed";
  }
}

// The same update by cublasDgemmStridedBatched in place and the reduction kernel: the same bits.
TEST_F(CudaFusedModularProduct, SameBitsAsTheDgemmAndReduction) {
  const int64_t n = 333;
  const FusedProductBlocks t = TrailingBlocks(n, 5, 128, 200, 190);
  absl::StatusOr<DeviceBatch> fused = DeviceBatch::Create(*context_, n, kPrimes, false, 5);
  absl::StatusOr<DeviceBatch> split = DeviceBatch::Create(*context_, n, kPrimes, false, 5);
  ASSERT_TRUE(fused.ok() && split.ok());
  ASSERT_TRUE(LaunchFusedSubtractProduct(context_->stream(), fused->view(), t).ok());
  absl::StatusOr<ScopedMathMode> mode =
      ScopedMathMode::Set(context_->cublas(), CUBLAS_DEFAULT_MATH);
  ASSERT_TRUE(mode.ok()) << mode.status();
  const ResidueBatch b = split->view();
  const double minus_one = -1.0;
  const double one = 1.0;
  const auto ld = static_cast<int>(n);
  const long long stride = n * n;
  // Row-major blocks: C^T -= B^T A^T in cuBLAS's column-major terms.
  ASSERT_EQ(cublasDgemmStridedBatched(context_->cublas(), CUBLAS_OP_N, CUBLAS_OP_N,
                                      static_cast<int>(t.cols), static_cast<int>(t.rows),
                                      static_cast<int>(t.depth), &minus_one, b.a + t.b_offset, ld,
                                      stride, b.a + t.a_offset, ld, stride, &one, b.a + t.c_offset,
                                      ld, stride, b.count),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_TRUE(LaunchReduceProduct(context_->stream(), b, t.c_offset, t.rows, t.cols, PieceProduct{},
                                  ProductUse::kSubtract)
                  .ok());
  absl::StatusOr<std::vector<double>> from_fused = fused->Download(*context_);
  absl::StatusOr<std::vector<double>> from_split = split->Download(*context_);
  ASSERT_TRUE(from_fused.ok() && from_split.ok());
  EXPECT_EQ(std::memcmp(from_fused->data(), from_split->data(), from_fused->size() * 8), 0);
  EXPECT_NE(*from_fused, fused->host()) << "nothing was computed";
}

TEST_F(CudaFusedModularProduct, LeavesASingularMatrixAndEmptyBlocksAlone) {
  const int64_t n = 160;
  const FusedProductBlocks t = TrailingBlocks(n, 0, 64, 96, 96);
  absl::StatusOr<DeviceBatch> batch = DeviceBatch::Create(*context_, n, kPrimes, false, 9);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_TRUE(batch->MarkSingular(*context_, 2).ok());
  ASSERT_TRUE(LaunchFusedSubtractProduct(context_->stream(), batch->view(), t).ok());
  FusedProductBlocks empty = t;
  empty.rows = 0;
  ASSERT_TRUE(LaunchFusedSubtractProduct(context_->stream(), batch->view(), empty).ok());
  empty = t;
  empty.cols = 0;
  ASSERT_TRUE(LaunchFusedSubtractProduct(context_->stream(), batch->view(), empty).ok());
  absl::StatusOr<std::vector<double>> got = batch->Download(*context_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, batch->Expected(t, /*skipped=*/2));
  FusedProductBlocks negative = t;
  negative.depth = -1;
  EXPECT_EQ(LaunchFusedSubtractProduct(context_->stream(), batch->view(), negative).code(),
            absl::StatusCode::kInvalidArgument);
}

// Leaf inverses of width w for every prime, as LaunchFactorLeaf stores them (low pieces, then
// high pieces, in a slot of kLeafInverseWords words), and the whole inverses for the reference.
struct HostInverses {
  std::vector<double> pieces;  // primes x kLeafInverseWords
  std::vector<int64_t> whole;  // primes x w x w
};
HostInverses RandomInverses(const std::vector<int64_t>& primes, int w, bool at_bound,
                            uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostInverses out;
  out.pieces.assign(primes.size() * kLeafInverseWords, 0.0);
  out.whole.resize(primes.size() * w * w);
  for (size_t b = 0; b < primes.size(); ++b) {
    const int64_t half = primes[b] / 2;
    std::uniform_int_distribution<int64_t> entry(-half, half);
    for (int e = 0; e < w * w; ++e) {
      const int64_t d = at_bound ? (e % 2 == 0 ? half : -half) : entry(rng);
      out.whole[b * w * w + e] = d;
      const double high = HighPiece(static_cast<double>(d));
      out.pieces[b * kLeafInverseWords + e] = LowPiece(static_cast<double>(d), high);
      out.pieces[b * kLeafInverseWords + w * w + e] = high;
    }
  }
  return out;
}

TEST_F(CudaFusedModularProduct, LeafInverseAppliedMatchesExactIntegersAndTheTwoPieceProduct) {
  struct InverseCase {
    int64_t n;
    int w;
    int64_t b_offset;
    int64_t cols;
    bool at_bound;
  };
  for (const InverseCase& t :
       {InverseCase{300, 64, 64 * 300 + 64, 236, false},
        InverseCase{257, 37, 3 * 257 + 40, 217, false}, InverseCase{200, 64, 0, 200, true},
        InverseCase{70, 1, 5, 65, false}}) {
    SCOPED_TRACE(::testing::Message() << "n=" << t.n << " w=" << t.w << " cols=" << t.cols);
    const HostInverses inverses = RandomInverses(kPrimes, t.w, t.at_bound, 31 + t.w);
    absl::StatusOr<DeviceBatch> fused = DeviceBatch::Create(*context_, t.n, kPrimes, false, 3);
    absl::StatusOr<DeviceBatch> split = DeviceBatch::Create(*context_, t.n, kPrimes, false, 3);
    absl::StatusOr<DeviceBuffer> pieces =
        context_->Allocate(inverses.pieces.size() * sizeof(double));
    absl::StatusOr<DeviceBuffer> product =
        context_->Allocate(kPrimes.size() * 2 * t.w * t.cols * sizeof(double));
    ASSERT_TRUE(fused.ok() && split.ok() && pieces.ok() && product.ok());
    ASSERT_TRUE(
        context_->Upload(inverses.pieces.data(), *pieces, inverses.pieces.size() * sizeof(double))
            .ok());
    ASSERT_TRUE(LaunchFusedApplyInverse(
                    context_->stream(), fused->view(),
                    LeafInverses{.first = pieces->as<double>(), .matrix_stride = kLeafInverseWords},
                    t.w, t.b_offset, t.cols)
                    .ok());
    // The two-piece way (core/cuda/modular_lu.cc): P = [low; high] B, then low + 2^16 high
    // reduced into B's place.
    const ResidueBatch b = split->view();
    absl::StatusOr<ScopedMathMode> mode =
        ScopedMathMode::Set(context_->cublas(), CUBLAS_DEFAULT_MATH);
    ASSERT_TRUE(mode.ok()) << mode.status();
    const double one = 1.0;
    const double zero = 0.0;
    const int64_t product_stride = 2 * t.w * t.cols;
    ASSERT_EQ(cublasDgemmStridedBatched(
                  context_->cublas(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(t.cols), 2 * t.w,
                  t.w, &one, b.a + t.b_offset, static_cast<int>(t.n), t.n * t.n,
                  pieces->as<double>(), t.w, kLeafInverseWords, &zero, product->as<double>(),
                  static_cast<int>(t.cols), product_stride, b.count),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_TRUE(LaunchReduceProduct(context_->stream(), b, t.b_offset, t.w, t.cols,
                                    PieceProduct{.data = product->as<double>(),
                                                 .stride = product_stride,
                                                 .ld = t.cols,
                                                 .high_offset = t.w * t.cols},
                                    ProductUse::kAssign)
                    .ok());
    absl::StatusOr<std::vector<double>> got = fused->Download(*context_);
    absl::StatusOr<std::vector<double>> two_piece = split->Download(*context_);
    ASSERT_TRUE(got.ok() && two_piece.ok());
    EXPECT_EQ(std::memcmp(got->data(), two_piece->data(), got->size() * 8), 0);
    // In int64: every sum below 64 (2^23)^2 = 2^52.
    std::vector<double> want = fused->host();
    for (size_t m = 0; m < kPrimes.size(); ++m) {
      const double* block = fused->host().data() + m * t.n * t.n + t.b_offset;
      for (int i = 0; i < t.w; ++i) {
        for (int64_t v = 0; v < t.cols; ++v) {
          int64_t x = 0;
          for (int k = 0; k < t.w; ++k) {
            x += inverses.whole[m * t.w * t.w + i * t.w + k] *
                 static_cast<int64_t>(block[k * t.n + v]);
          }
          want[m * t.n * t.n + t.b_offset + i * t.n + v] =
              static_cast<double>(Balanced(x, kPrimes[m]));
        }
      }
    }
    int64_t wrong = 0;
    for (size_t e = 0; e < want.size(); ++e) wrong += (*got)[e] != want[e];
    EXPECT_EQ(wrong, 0);
  }
  absl::StatusOr<DeviceBatch> batch = DeviceBatch::Create(*context_, 100, kPrimes, false, 1);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(
      LaunchFusedApplyInverse(context_->stream(), batch->view(), LeafInverses{}, 65, 0, 10).code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace matrixd::cuda
