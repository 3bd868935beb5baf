// The GPU's blocked LU mod p (core/cuda/modular_lu.h) against the CPU backend's residue, exactly:
// random matrices of orders around the leaf (64) and panel (128) widths, every range of primes
// (one-piece and two-piece products, the uint64 path), and the matrices that exercise the pivot
// search: vanishing leading minors, diagonal blocks singular mod p, singular and zero matrices.
// Every GPU residue is taken with look-ahead and on one stream (ModularLuTuning), both checked.
// Then the upload overlapped with the factorization, against the serial path and the CPU. Skips
// without a CUDA device.
#include <climits>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/modular_lu.h"
#include "core/cuda/pinned_staging.h"
#include "core/job_control.h"
#include "core/make_backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"
#include "tests/core/cancel_at_progress.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

constexpr uint64_t kPrime16 = 65521;
constexpr uint64_t kPrime26 = 67108859;
constexpr uint64_t kPrime31 = 2147483629;
constexpr uint64_t kPrime32 = 4294967291;  // largest prime below 2^32: still float64 residues
constexpr uint64_t kPrime62 = 4611686018427387847;

const std::vector<uint64_t>& AllPrimes() {
  static const std::vector<uint64_t> primes = {2,        3,        kPrime16, kPrime26,
                                               kPrime31, kPrime32, kPrime62};
  return primes;
}

std::vector<int64_t> RandomEntries(int64_t n, std::mt19937_64& rng) {
  std::vector<int64_t> a(static_cast<size_t>(n * n));
  for (int64_t& x : a) x = static_cast<int64_t>(rng());
  return a;
}

class CudaModularLuTest : public CudaContextTest {
 protected:
  void SetUp() override {
    CudaContextTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<Backend>> cpu = MakeBackend("cpu", {});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = *std::move(cpu);
    absl::StatusOr<std::unique_ptr<PinnedStaging>> staging =
        PinnedStaging::Create(context_->stream());
    ASSERT_TRUE(staging.ok()) << staging.status();
    staging_ = *std::move(staging);
  }
  void TearDown() override { SetModularLuTuning({}); }

  uint64_t Cpu(const Matrix& a, uint64_t p) {
    absl::StatusOr<DeterminantResult> r = cpu_->Determinant(a.view(), {.modulus = p}, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->residue : p;
  }
  // The GPU's residue with look-ahead (the default), checked against the one-stream schedule's.
  uint64_t Gpu(const Matrix& a, uint64_t p) {
    const uint64_t one_stream = GpuWith(a, p, {.look_ahead = false});
    const uint64_t look_ahead = GpuWith(a, p, {.look_ahead = true});
    EXPECT_EQ(look_ahead, one_stream) << "look-ahead against one stream";
    return look_ahead;
  }
  uint64_t GpuWith(const Matrix& a, uint64_t p, const ModularLuTuning& tuning) {
    const ModularLuTuning before = GetModularLuTuning();
    SetModularLuTuning(tuning);
    absl::StatusOr<DeterminantResult> r = ModularLuDeterminant(a.view(), p, *context_, nullptr);
    SetModularLuTuning(before);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return p;
    EXPECT_EQ(r->method_used, DeterminantMethod::kLu);
    EXPECT_GT(r->stats.bytes_moved, 0u);
    return r->residue;
  }
  // Both backends on `values` (n x n) for every prime; returns how many residues were non-zero.
  int ExpectSameResidues(int64_t n, const std::vector<int64_t>& values) {
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    int non_zero = 0;
    for (const uint64_t p : AllPrimes()) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " p=" << p);
      const uint64_t expected = Cpu(a, p);
      EXPECT_EQ(Gpu(a, p), expected);
      non_zero += expected != 0 ? 1 : 0;
    }
    return non_zero;
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
    if (direct.ok()) {
      EXPECT_EQ(direct->residue, serial) << "the context's own path";
    }
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

  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<PinnedStaging> staging_;
};

TEST_F(CudaModularLuTest, RandomMatricesMatchCpuResidues) {
  std::mt19937_64 rng(1);
  // Around the leaf and panel widths, and orders whose last panel is narrower than 128 or just
  // one column (look-ahead's split of the trailing update: 257, 385).
  for (const int64_t n : {1, 2, 17, 63, 64, 65, 127, 128, 129, 255, 257, 300, 385, 1000}) {
    ExpectSameResidues(n, RandomEntries(n, rng));
  }
}

TEST_F(CudaModularLuTest, SmallEntriesMatchCpuResidues) {
  // Entries in {-1, 0, 1}: mod 2 and 3 many pivots vanish, so the leaves swap rows often, inside
  // the diagonal block and from below it.
  std::mt19937_64 rng(2);
  for (const int64_t n : {5, 64, 129, 300}) {
    std::vector<int64_t> values(static_cast<size_t>(n * n));
    for (int64_t& x : values) x = static_cast<int64_t>(rng() % 3) - 1;
    ExpectSameResidues(n, values);
  }
}

TEST_F(CudaModularLuTest, VanishingLeadingMinorsTakePivotsFromBelowTheBlock) {
  // The top-left 70 x 70 block is zero: no leaf finds a pivot in its diagonal block for the first
  // 64 columns and must take rows from below (and from below the second leaf, too).
  std::mt19937_64 rng(3);
  // n >= 140: below that the first 70 columns, non-zero only in the last n - 70 rows, have rank
  // below 70 and every residue is 0 (n = 71 was such a case).
  for (const int64_t n : {141, 200, 300}) {
    std::vector<int64_t> values = RandomEntries(n, rng);
    for (int64_t i = 0; i < 70; ++i) {
      for (int64_t j = 0; j < 70; ++j) values[i * n + j] = 0;
    }
    EXPECT_GT(ExpectSameResidues(n, values), 0);
  }
}

TEST_F(CudaModularLuTest, PivotsFoundOnlyFarBelowTheBlock) {
  // Columns 0..9 are zero except for one entry each, in the last rows: the leaf finds each pivot
  // only after scanning every row below its block (many groups of warps), and the rows it swaps
  // in take the block rows' data in turn (row n - 1 - j gives column j's pivot).
  std::mt19937_64 rng(9);
  for (const int64_t n : {700, 1030}) {
    std::vector<int64_t> values(static_cast<size_t>(n * n));
    for (int64_t& x : values) x = static_cast<int64_t>(rng() % 2001) - 1000;
    for (int64_t j = 0; j < 10; ++j) {
      for (int64_t i = 0; i < n; ++i) values[i * n + j] = 0;
      values[(n - 1 - j) * n + j] = 1 + static_cast<int64_t>(j);
    }
    EXPECT_GT(ExpectSameResidues(n, values), 0);
  }
}

TEST_F(CudaModularLuTest, EntriesThatVanishModPAreNotPivots) {
  // Every entry of the first 130 rows is a multiple of p except one per row, placed so that each
  // column's pivot sits far below and right of where LU would look first.
  for (const uint64_t p : {uint64_t{3}, kPrime16, kPrime31}) {
    SCOPED_TRACE(::testing::Message() << "p=" << p);
    std::mt19937_64 rng(4);
    const int64_t n = 260;
    std::vector<int64_t> values = RandomEntries(n, rng);
    for (int64_t i = 0; i < 130; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        values[i * n + j] = static_cast<int64_t>(p) * (static_cast<int64_t>(rng() % 201) - 100);
      }
      values[i * n + (n - 1 - i)] += 1 + static_cast<int64_t>(i % 2);
    }
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    const uint64_t expected = Cpu(a, p);
    if (p > 3) {
      EXPECT_NE(expected, 0u);  // mod 3 the random lower part is often singular
    }
    EXPECT_EQ(Gpu(a, p), expected);
  }
}

TEST_F(CudaModularLuTest, SingularModPGivesZero) {
  // Row 200 = row 3 + row 150 + p * (small integers): singular mod p, not over the integers; the
  // dependence shows only in the second panel.
  for (const uint64_t p : {uint64_t{2}, kPrime16, kPrime26, kPrime31, kPrime32, kPrime62}) {
    SCOPED_TRACE(::testing::Message() << "p=" << p);
    std::mt19937_64 rng(5);
    const int64_t n = 300;
    std::vector<int64_t> values(static_cast<size_t>(n * n));
    for (int64_t& x : values) x = static_cast<int64_t>(rng() % 2001) - 1000;
    for (int64_t j = 0; j < n; ++j) {
      // Multiples of p where they fit in int64.
      const int64_t multiple = p < (uint64_t{1} << 40) ? static_cast<int64_t>(p) : 0;
      values[200 * n + j] = values[3 * n + j] + values[150 * n + j] +
                            multiple * (static_cast<int64_t>(rng() % 7) - 3);
    }
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    EXPECT_EQ(Gpu(a, p), Cpu(a, p));
  }
}

TEST_F(CudaModularLuTest, ZeroMatricesAndZeroColumnsGiveZero) {
  for (const int64_t n : {1, 2, 64, 129}) {
    const Matrix zero = Matrix::FromValues<int64_t>(n, n, std::vector<int64_t>(n * n, 0));
    for (const uint64_t p : AllPrimes()) EXPECT_EQ(Gpu(zero, p), 0u) << "n=" << n << " p=" << p;
  }
  std::mt19937_64 rng(6);
  const int64_t n = 200;
  for (const int64_t column : {int64_t{0}, int64_t{100}, n - 1}) {
    std::vector<int64_t> values = RandomEntries(n, rng);
    for (int64_t i = 0; i < n; ++i) values[i * n + column] = 0;
    const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
    for (const uint64_t p : AllPrimes()) {
      EXPECT_EQ(Gpu(a, p), 0u) << "column " << column << " p=" << p;
    }
  }
}

TEST_F(CudaModularLuTest, OneByOneReducesNegativeEntries) {
  for (const uint64_t p : AllPrimes()) {
    const Matrix a = Matrix::FromValues<int64_t>(1, 1, {-7});
    const uint64_t expected = (p - 7 % p) % p;
    EXPECT_EQ(Gpu(a, p), expected) << "p=" << p;
  }
}

// Orders whose int64 matrix (>= 8 MiB) comes from pageable memory through the pinned staging,
// piece by piece (PinnedStaging::UploadInPieces): narrowed to int32 while the entries fit, wide
// from the first piece with an entry beyond int32. One piece at n = 1100, two at n = 2100.
TEST_F(CudaModularLuTest, StagedEntriesNarrowOrWideMatchCpuResidues) {
  std::mt19937_64 rng(9);
  for (const int64_t n : {1100, 2100}) {
    const std::vector<uint64_t> primes =
        n < 2000 ? std::vector<uint64_t>{3, kPrime16, kPrime31, kPrime32}
                 : std::vector<uint64_t>{kPrime16, kPrime31};
    const auto expect_same = [&](const std::vector<int64_t>& values, const char* what) {
      const Matrix a = Matrix::FromValues<int64_t>(n, n, values);
      for (const uint64_t p : primes) {
        SCOPED_TRACE(::testing::Message() << what << ", n=" << n << " p=" << p);
        EXPECT_EQ(Gpu(a, p), Cpu(a, p));
      }
    };
    const size_t count = static_cast<size_t>(n * n);
    // Every entry in int32, the extremes included: every piece narrow.
    std::vector<int64_t> narrow(count);
    for (int64_t& x : narrow) x = static_cast<int32_t>(rng());
    narrow[0] = INT32_MIN;
    narrow[count - 1] = INT32_MAX;
    expect_same(narrow, "int32 entries");
    // Full int64 entries: every piece wide.
    expect_same(RandomEntries(n, rng), "int64 entries");
    // One entry just beyond INT32_MAX near the end: at n = 2100 the first piece narrow, the last
    // wide.
    std::vector<int64_t> mixed = narrow;
    mixed[count - 2] = int64_t{INT32_MAX} + 1;
    expect_same(mixed, "one entry beyond int32 near the end");
    // One far beyond int32 in the first piece: from there on every piece wide.
    mixed[count - 2] = INT32_MIN;
    mixed[count / 3] = -(int64_t{1} << 40) + 3;
    expect_same(mixed, "one entry beyond int32 in the first piece");
  }
}

TEST_F(CudaModularLuTest, ReportsPhaseTimesAndWork) {
  std::mt19937_64 rng(7);
  const Matrix a = Matrix::FromValues<int64_t>(500, 500, RandomEntries(500, rng));
  absl::StatusOr<DeterminantResult> r =
      ModularLuDeterminant(a.view(), kPrime31, *context_, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> names;
  for (const KernelRecord& k : r->stats.kernels) {
    names.push_back(k.kernel);
    EXPECT_GT(k.seconds, 0.0) << k.kernel;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"modp_residues", "modp_panel", "modp_gemm",
                                             "modp_reduce", "modp_factor", "modp_total"}));
  // At least the 2/3 n^3 of the LU's multiply-adds (the DGEMMs do two pieces' worth).
  EXPECT_GT(r->stats.flops, 2.0 / 3.0 * 500.0 * 500.0 * 500.0);
}

TEST_F(CudaModularLuTest, CancellationStopsBetweenPanels) {
  std::mt19937_64 rng(8);
  const int64_t n = 3000;
  const Matrix a = Matrix::FromValues<int64_t>(n, n, RandomEntries(n, rng));
  JobControl control;
  control.Cancel();
  EXPECT_EQ(ModularLuDeterminant(a.view(), kPrime31, *context_, &control).status().code(),
            absl::StatusCode::kCancelled);
  const absl::StatusOr<DeterminantResult> stopped = testing::RunCancellingAt(
      0.2, [&](JobControl& c) { return ModularLuDeterminant(a.view(), kPrime31, *context_, &c); });
  // The run may finish before the watcher sees 20 %; if it stopped, it says so.
  if (!stopped.ok()) {
    EXPECT_EQ(stopped.status().code(), absl::StatusCode::kCancelled);
  }
  // The context stays usable.
  EXPECT_EQ(Gpu(Matrix::FromValues<int64_t>(2, 2, {1, 2, 3, 4}), kPrime16), kPrime16 - 2);
}

// ---- The upload overlapped with the factorization (ModularLuTuning::overlap): pieces of rows
// written transposed, the LU advancing as they land. Each residue against the same matrix's on the
// path that factors after the whole upload and against the CPU backend's: orders around the panel
// width and the piece sizes, several piece sizes, look-ahead on and off, pivots that move rows
// across pieces, a dependence between pieces (singular), and int64 entries beyond int32 in the
// first and in a later piece. ----

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

TEST_F(CudaModularLuTest, RandomMatricesMatchTheSerialPathAndCpu) {
  std::mt19937_64 rng(11);
  for (const int64_t n : {1, 2, 127, 128, 1000, 1023, 1024, 1025, 2100}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const Matrix a = Matrix::FromValues<int64_t>(n, n, Entries(n, int64_t{1} << 30, rng));
    for (const uint64_t p : {uint64_t{3}, kPrime16, kPrime31}) {
      EXPECT_EQ(ExpectOverlapSame(a, p, PieceRows(n)), Cpu(a, p));
    }
  }
}

TEST_F(CudaModularLuTest, OrderFourThousandMatchesTheSerialPathAndCpu) {
  std::mt19937_64 rng(12);
  const int64_t n = 4096;
  const Matrix a = Matrix::FromValues<int64_t>(n, n, Entries(n, 1000, rng));
  EXPECT_EQ(ExpectOverlapSame(a, kPrime16, {0, 256, 384}), Cpu(a, kPrime16));
  ExpectOverlapSame(a, kPrime31, {0, 128, 256, 512});
}

TEST_F(CudaModularLuTest, PivotsFromLaterPiecesMoveRowsInEveryPiece) {
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
    if (p > 3) {
      EXPECT_NE(expected, 0u);
    }
    EXPECT_EQ(ExpectOverlapSame(a, p, {0, 100, 128, 300}), expected) << "p=" << p;
  }
}

TEST_F(CudaModularLuTest, DependenceAcrossPiecesGivesZero) {
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

TEST_F(CudaModularLuTest, WideEntriesInTheFirstOrALaterPiece) {
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

TEST_F(CudaModularLuTest, PrimesAboveTwoToTheThirtyTwoIgnoreTheStaging) {
  // The uint64 path takes no pieces; the staging changes nothing there.
  std::mt19937_64 rng(16);
  const int64_t n = 300;
  const Matrix a = Matrix::FromValues<int64_t>(n, n, Entries(n, 1000, rng));
  const uint64_t p = kPrime62;
  EXPECT_EQ(Staged(a, p, {.overlap = true, .piece_rows = 64}), Cpu(a, p));
}

TEST_F(CudaModularLuTest, ReportsTheWholeSpanBesideTheOverlappingPhases) {
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
