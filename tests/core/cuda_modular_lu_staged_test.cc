// The GPU's det mod p with the upload overlapped (core/cuda/modular_lu.h: pieces of rows written
// transposed, the LU advancing as they land) against the same matrix's residue on the path that
// factors after the whole upload and against the CPU backend's, exactly: orders around the panel
// width and the piece sizes, several piece sizes, look-ahead on and off, pivots that move rows
// across pieces, a dependence between pieces (singular), and int64 entries beyond int32 in the
// first and in a later piece. Skips without a CUDA device.
#include <climits>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/modular_lu.h"
#include "core/cuda/pinned_staging.h"
#include "core/make_backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

constexpr uint64_t kPrime16 = 65521;
constexpr uint64_t kPrime31 = 2147483629;

class CudaModularLuStagedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here";
    absl::StatusOr<std::unique_ptr<DeviceContext>> context = DeviceContext::Create(0);
    ASSERT_TRUE(context.ok()) << context.status();
    context_ = *std::move(context);
    absl::StatusOr<std::unique_ptr<PinnedStaging>> staging =
        PinnedStaging::Create(context_->stream());
    ASSERT_TRUE(staging.ok()) << staging.status();
    staging_ = *std::move(staging);
    absl::StatusOr<std::unique_ptr<Backend>> cpu = MakeBackend("cpu", {});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = *std::move(cpu);
  }
  void TearDown() override { SetModularLuTuning({}); }

  uint64_t Cpu(const Matrix& a, uint64_t p) {
    absl::StatusOr<DeterminantResult> r = cpu_->Determinant(a.view(), {.modulus = p}, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->residue : p;
  }
  // Through the test's staging with `tuning`.
  uint64_t Staged(const Matrix& a, uint64_t p, const ModularLuTuning& tuning) {
    SetModularLuTuning(tuning);
    absl::StatusOr<DeterminantResult> r =
        StagedModularLuDeterminant(a.view(), p, *staging_, *context_, nullptr);
    SetModularLuTuning({});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->residue : p;
  }
  // The overlapped residue for every piece size of `piece_rows` and look-ahead on and off, each
  // against the residue after the whole upload (and, for small orders, the direct upload's);
  // returns that residue.
  uint64_t ExpectOverlapSame(const Matrix& a, uint64_t p, const std::vector<int64_t>& piece_rows) {
    const uint64_t serial = Staged(a, p, {.look_ahead = true, .overlap = false});
    absl::StatusOr<DeterminantResult> direct =
        ModularLuDeterminant(a.view(), p, *context_, nullptr);
    EXPECT_TRUE(direct.ok()) << direct.status();
    if (direct.ok()) EXPECT_EQ(direct->residue, serial) << "the context's own path";
    for (const bool look_ahead : {true, false}) {
      for (const int64_t rows : piece_rows) {
        SCOPED_TRACE(::testing::Message()
                     << "p=" << p << " look-ahead " << look_ahead << " piece rows " << rows);
        EXPECT_EQ(Staged(a, p, {.look_ahead = look_ahead, .overlap = true, .piece_rows = rows}),
                  serial);
      }
    }
    return serial;
  }

  std::unique_ptr<DeviceContext> context_;
  std::unique_ptr<PinnedStaging> staging_;
  std::unique_ptr<Backend> cpu_;
};

std::vector<int64_t> Entries(int64_t n, int64_t bound, std::mt19937_64& rng) {
  std::vector<int64_t> values(static_cast<size_t>(n * n));
  for (int64_t& x : values) {
    x = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * bound + 1)) - bound;
  }
  return values;
}

// Piece sizes: a chunk's worth (0), one row at small orders, and sizes below, at and across the
// panel width.
std::vector<int64_t> PieceRows(int64_t n) {
  if (n <= 128) return {0, 1, 7, 64, 128};
  return {0, 100, 128, 300, 512};
}

TEST_F(CudaModularLuStagedTest, RandomMatricesMatchTheSerialPathAndCpu) {
  std::mt19937_64 rng(11);
  for (const int64_t n : {1, 2, 127, 128, 1000, 1023, 1024, 1025, 2100}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const Matrix a = Matrix::FromValues<int64_t>(n, n, Entries(n, int64_t{1} << 30, rng));
    for (const uint64_t p : {uint64_t{3}, kPrime16, kPrime31}) {
      EXPECT_EQ(ExpectOverlapSame(a, p, PieceRows(n)), Cpu(a, p));
    }
  }
}

TEST_F(CudaModularLuStagedTest, OrderFourThousandMatchesTheSerialPathAndCpu) {
  std::mt19937_64 rng(12);
  const int64_t n = 4096;
  const Matrix a = Matrix::FromValues<int64_t>(n, n, Entries(n, 1000, rng));
  EXPECT_EQ(ExpectOverlapSame(a, kPrime16, {0, 256, 384}), Cpu(a, kPrime16));
  ExpectOverlapSame(a, kPrime31, {0, 128, 256, 512});
}

TEST_F(CudaModularLuStagedTest, PivotsFromLaterPiecesMoveRowsInEveryPiece) {
  // In the matrix factored (A^T) the first column is row 0 of A: zero but for its last entry, and
  // the top-left 140 x 140 block is zero: the pivots come from rows far below, and their moves
  // reach the columns of every later piece as deferred work.
  std::mt19937_64 rng(13);
  const int64_t n = 1100;
  std::vector<int64_t> values = Entries(n, 1000, rng);
  for (int64_t i = 0; i < 140; ++i) {
    for (int64_t j = 0; j < 140; ++j) values[i * n + j] = 0;
  }
  for (int64_t j = 0; j < n - 1; ++j) values[j] = 0;
  values[n - 1] = 5;
  const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
  for (const uint64_t p : {uint64_t{3}, kPrime31}) {
    const uint64_t expected = Cpu(a, p);
    if (p > 3) EXPECT_NE(expected, 0u);
    EXPECT_EQ(ExpectOverlapSame(a, p, {0, 100, 128, 300}), expected) << "p=" << p;
  }
}

TEST_F(CudaModularLuStagedTest, DependenceAcrossPiecesGivesZero) {
  // Row 2000 = row 3 + row 1500 + p (small integers): singular mod p; in A^T a column of the last
  // piece depends on columns of the first two.
  std::mt19937_64 rng(14);
  const int64_t n = 2100;
  for (const uint64_t p : {kPrime16, kPrime31}) {
    std::vector<int64_t> values = Entries(n, 1000, rng);
    for (int64_t j = 0; j < n; ++j) {
      values[2000 * n + j] = values[3 * n + j] + values[1500 * n + j] +
                             static_cast<int64_t>(p) * (static_cast<int64_t>(rng() % 7) - 3);
    }
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    EXPECT_EQ(Cpu(a, p), 0u);
    EXPECT_EQ(ExpectOverlapSame(a, p, {0, 256, 300}), 0u) << "p=" << p;
  }
}

TEST_F(CudaModularLuStagedTest, WideEntriesInTheFirstOrALaterPiece) {
  // Entries beyond int32 go full width from the piece that holds the first of them on.
  std::mt19937_64 rng(15);
  const int64_t n = 1030;
  const std::vector<int64_t> narrow = Entries(n, INT32_MAX, rng);
  std::vector<int64_t> first = narrow;
  first[5] = -(int64_t{1} << 40) + 3;
  std::vector<int64_t> later = narrow;
  later[static_cast<size_t>(n * n - 2)] = int64_t{INT32_MAX} + 1;
  for (const auto& values : {first, later}) {
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    for (const uint64_t p : {kPrime16, kPrime31}) {
      EXPECT_EQ(ExpectOverlapSame(a, p, {0, 128, 300}), Cpu(a, p)) << "p=" << p;
    }
  }
}

TEST_F(CudaModularLuStagedTest, PrimesAboveTwoToTheThirtyTwoIgnoreTheStaging) {
  // The uint64 path takes no pieces; the staging changes nothing there.
  std::mt19937_64 rng(16);
  const int64_t n = 300;
  const Matrix a = Matrix::FromValues<int64_t>(n, n, Entries(n, 1000, rng));
  const uint64_t p = 4611686018427387847;
  EXPECT_EQ(Staged(a, p, {.overlap = true, .piece_rows = 64}), Cpu(a, p));
}

TEST_F(CudaModularLuStagedTest, ReportsTheWholeSpanBesideTheOverlappingPhases) {
  std::mt19937_64 rng(17);
  const int64_t n = 1100;
  const Matrix a = Matrix::FromValues<int64_t>(n, n, Entries(n, 1000, rng));
  SetModularLuTuning({.overlap = true, .piece_rows = 256});
  absl::StatusOr<DeterminantResult> r =
      StagedModularLuDeterminant(a.view(), kPrime31, *staging_, *context_, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  double residues = 0;
  double factor = 0;
  double total = 0;
  for (const KernelRecord& k : r->stats.kernels) {
    EXPECT_GT(k.seconds, 0.0) << k.kernel;
    if (k.kernel == "modp_residues") residues = k.seconds;
    if (k.kernel == "modp_factor") factor = k.seconds;
    if (k.kernel == "modp_total") total = k.seconds;
  }
  EXPECT_GT(total, 0.0);
  EXPECT_LE(residues, total * 1.001);
  EXPECT_LE(factor, total * 1.001);
}

}  // namespace
}  // namespace matrixd::cuda
