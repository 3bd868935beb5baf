// The cuBLASLt products of the modular LU's trailing updates (core/cuda/lt_batched_dgemm.h): the
// choice among the heuristic's candidates and the alignment arithmetic on the host (no device
// needed), then, on a device, products of small integers against cublasDgemmStridedBatched bit for
// bit at the exactness limit, aligned and unaligned. The device tests skip without one.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/lt_batched_dgemm.h"
#include "core/cuda/scoped_math_mode.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

TEST(LtCandidates, PrefersTheMeasuredTileElseTheHeuristicsFirst) {
  const std::vector<uint32_t> with = {CUBLASLT_MATMUL_TILE_64x64, CUBLASLT_MATMUL_TILE_64x128,
                                      kPreferredLtTile, kPreferredLtTile};
  EXPECT_EQ(ChooseLtCandidate(with, kPreferredLtTile), 2);
  const std::vector<uint32_t> without = {CUBLASLT_MATMUL_TILE_64x128, CUBLASLT_MATMUL_TILE_64x64};
  EXPECT_EQ(ChooseLtCandidate(without, kPreferredLtTile), 0);
  EXPECT_EQ(ChooseLtCandidate({}, kPreferredLtTile), -1);
}

TEST(LtCandidates, AlignmentIsTheLowestBitOfAddressAndStrideUpTo256) {
  EXPECT_EQ(LtAlignment(0x10000, 1000 * 1000), 256u);  // stride 8e6 bytes: 256 divides it
  EXPECT_EQ(LtAlignment(0x10000 + 8 * 128, 1000 * 1000), 256u);
  EXPECT_EQ(LtAlignment(0x10000 + 8, 1000 * 1000), 8u);
  EXPECT_EQ(LtAlignment(0x10000, 999 * 999), 8u);  // an odd stride: every other matrix
  EXPECT_EQ(LtAlignment(0x10000 + 16, 1002 * 1002), 16u);
  EXPECT_EQ(LtAlignment(0x10000, 0), 256u);
}

// C -= A B on `batch` matrices of order `ld` (blocks at `offset` elements into each), entries at
// the bound of the modular LU's one-piece updates (|x| <= 2^23 - 1, k = 128: every partial sum
// below 2^53), once through cuBLASLt and once through cuBLAS: the same bits.
TEST(CudaLtBatchedDgemm, SmallIntegerProductsMatchCublasBitForBit) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here";
  absl::StatusOr<std::unique_ptr<DeviceContext>> made = DeviceContext::Create(0);
  ASSERT_TRUE(made.ok()) << made.status();
  DeviceContext* context = made->get();
  struct Case {
    int ld;
    int m;
    int n;
    int64_t offset;
  };
  std::mt19937_64 rng(29);
  const int64_t half = (int64_t{1} << 23) - 1;
  std::uniform_int_distribution<int64_t> entry(-half, half);
  constexpr int kDepth = 128;
  constexpr int kBatch = 5;
  for (const Case& t : {Case{512, 256, 300, 0}, Case{513, 200, 257, 129}, Case{640, 128, 384, 1}}) {
    SCOPED_TRACE(::testing::Message() << "ld=" << t.ld << " offset=" << t.offset);
    const int64_t stride = int64_t{t.ld} * t.ld;
    const size_t count = static_cast<size_t>(stride) * kBatch;
    std::vector<double> host(count);
    for (double& x : host) x = static_cast<double>(entry(rng));
    // The first matrix's first 128 columns (all of A, B's first columns) at 2^23 - 1: sums of
    // 128 products at the bound.
    for (int64_t i = 0; i < int64_t{t.ld} * kDepth && i < stride; ++i) host[i] = half;
    const size_t bytes = count * sizeof(double);
    absl::StatusOr<DeviceBuffer> lt_matrices = context->Allocate(bytes);
    absl::StatusOr<DeviceBuffer> blas_matrices = context->Allocate(bytes);
    absl::StatusOr<DeviceBuffer> workspace = context->Allocate(kLtWorkspaceBytes);
    ASSERT_TRUE(lt_matrices.ok() && blas_matrices.ok() && workspace.ok());
    ASSERT_TRUE(context->Upload(host.data(), *lt_matrices, bytes).ok());
    ASSERT_TRUE(context->Upload(host.data(), *blas_matrices, bytes).ok());
    // Column-major: A m x k at offset, B k x n below it (rows k.. of columns 0..), C beside A.
    const int64_t a_at = t.offset;
    const int64_t b_at = t.offset + t.m;
    const int64_t c_at = t.offset + int64_t{kDepth} * t.ld;
    ASSERT_LE(b_at + kDepth + int64_t{t.n - 1} * t.ld, stride);
    ASSERT_LE(c_at + t.m + int64_t{t.n - 1} * t.ld, stride);
    auto at = [&](DeviceBuffer& buffer, int64_t offset) { return buffer.as<double>() + offset; };
    const BatchedDgemmShape shape{
        .m = t.m,
        .n = t.n,
        .k = kDepth,
        .lda = t.ld,
        .ldb = t.ld,
        .ldc = t.ld,
        .stride_a = stride,
        .stride_b = stride,
        .stride_c = stride,
        .batch = kBatch,
        .align_a = LtAlignment(reinterpret_cast<uintptr_t>(at(*lt_matrices, a_at)), stride),
        .align_b = LtAlignment(reinterpret_cast<uintptr_t>(at(*lt_matrices, b_at)), stride),
        .align_c = LtAlignment(reinterpret_cast<uintptr_t>(at(*lt_matrices, c_at)), stride)};
    absl::StatusOr<cublasLtHandle_t> lt = context->cublas_lt();
    ASSERT_TRUE(lt.ok()) << lt.status();
    absl::StatusOr<ScopedMathMode> mode =
        ScopedMathMode::Set(context->cublas(), CUBLAS_DEFAULT_MATH);
    ASSERT_TRUE(mode.ok()) << mode.status();
    const double minus_one = -1.0;
    const double one = 1.0;
    const absl::Status through_lt =
        LtBatchedDgemm(*lt, context->cublas(), context->stream(), context->device(), shape,
                       minus_one, at(*lt_matrices, a_at), at(*lt_matrices, b_at), one,
                       at(*lt_matrices, c_at), workspace->data(), kLtWorkspaceBytes);
    ASSERT_TRUE(through_lt.ok()) << through_lt;
    EXPECT_EQ(cublasDgemmStridedBatched(context->cublas(), CUBLAS_OP_N, CUBLAS_OP_N, t.m, t.n,
                                        kDepth, &minus_one, at(*blas_matrices, a_at), t.ld, stride,
                                        at(*blas_matrices, b_at), t.ld, stride, &one,
                                        at(*blas_matrices, c_at), t.ld, stride, kBatch),
              CUBLAS_STATUS_SUCCESS);
    std::vector<double> from_lt(count), from_blas(count);
    ASSERT_TRUE(context->Download(*lt_matrices, from_lt.data(), bytes).ok());
    ASSERT_TRUE(context->Download(*blas_matrices, from_blas.data(), bytes).ok());
    EXPECT_EQ(std::memcmp(from_lt.data(), from_blas.data(), bytes), 0);
    EXPECT_NE(std::memcmp(from_lt.data(), host.data(), bytes), 0) << "nothing was computed";
    if (shape.align_a == 256 && shape.align_b == 256 && shape.align_c == 256) {
      EXPECT_TRUE(LtChoiceCached(context->device(), shape)) << "cuBLASLt offered no algorithm";
    }
  }
}

}  // namespace
}  // namespace matrixd::cuda
