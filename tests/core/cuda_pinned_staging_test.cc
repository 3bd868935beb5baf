// The pinned staging's narrowing upload (core/cuda/pinned_staging.h): the host narrowing of int64
// values to int32 and its check at the int32 boundaries, split over the host threads, with its
// speed next to memcpy's (printed, not asserted); then, on a device, UploadInPieces delivering
// every piece narrow while the values fit and wide from the first piece that does not. Device
// tests skip where there is no CUDA device.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/pinned_staging.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// Values that do not fit in int32, among them some whose low 32 bits alone look harmless.
const std::vector<int64_t>& OutsideInt32() {
  static const std::vector<int64_t> values = {kInt32Max + 1,
                                              kInt32Min - 1,
                                              int64_t{1} << 32,
                                              (int64_t{1} << 32) + 5,
                                              -(int64_t{1} << 32),
                                              -(int64_t{1} << 32) + 5,
                                              std::numeric_limits<int64_t>::max(),
                                              std::numeric_limits<int64_t>::min()};
  return values;
}

std::vector<int64_t> FittingValues(size_t count) {
  std::vector<int64_t> values(count);
  for (size_t i = 0; i < count; ++i) {
    values[i] = static_cast<int64_t>(i * 2654435761u % 4294967296u) + kInt32Min;
  }
  return values;
}

std::vector<int32_t> Narrowed(const std::vector<int64_t>& values) {
  std::vector<int32_t> expected(values.size());
  for (size_t i = 0; i < values.size(); ++i) expected[i] = static_cast<int32_t>(values[i]);
  return expected;
}

TEST(PinnedStagingNarrowing, BoundariesAndNegativesFit) {
  const std::vector<int64_t> values = {
      0, 1, -1, kInt32Min, kInt32Max, kInt32Min + 1, kInt32Max - 1, -123456789, 987654321};
  std::vector<int32_t> to(values.size(), 7);
  EXPECT_TRUE(NarrowToInt32(values.data(), values.size(), to.data()));
  EXPECT_EQ(to, Narrowed(values));
}

TEST(PinnedStagingNarrowing, OneValueJustOutsideDoesNotFit) {
  for (const int64_t v : OutsideInt32()) {
    int32_t to = 0;
    EXPECT_FALSE(NarrowToInt32(&v, 1, &to)) << v;
  }
  for (const int64_t v : {kInt32Min, kInt32Max, int64_t{-5}}) {
    int32_t to = 0;
    EXPECT_TRUE(NarrowToInt32(&v, 1, &to)) << v;
    EXPECT_EQ(to, v);
  }
  EXPECT_TRUE(NarrowToInt32(nullptr, 0, nullptr));
}

TEST(PinnedStagingNarrowing, OneValueOutsideAnywhereIsSeen) {
  const size_t count = 1000;  // not a multiple of any vector width
  for (const int64_t bad : OutsideInt32()) {
    for (const size_t at : {size_t{0}, size_t{1}, size_t{3}, size_t{500}, count - 2, count - 1}) {
      std::vector<int64_t> values = FittingValues(count);
      values[at] = bad;
      std::vector<int32_t> to(count);
      EXPECT_FALSE(NarrowToInt32(values.data(), count, to.data())) << bad << " at " << at;
      EXPECT_FALSE(ParallelNarrowToInt32(values.data(), count, to.data())) << bad << " at " << at;
    }
  }
}

// Large enough to be split over every host thread, in shares of unequal length: a value outside
// at either side of each share's boundary is seen, and a fitting array is copied whole; with the
// default thread count and with more threads set.
TEST(PinnedStagingNarrowing, ParallelSplitSeesEveryShare) {
  const size_t count = 3 * (size_t{1} << 20) + 7;  // 24 MiB read: up to 24 threads
  for (const int threads : {PinnedStaging::DefaultHostThreads(), 16}) {
    PinnedStaging::SetHostThreads(threads);
    const size_t share = (count + threads - 1) / threads;
    std::vector<int64_t> values = FittingValues(count);
    std::vector<int32_t> to(count, 0);
    ASSERT_TRUE(ParallelNarrowToInt32(values.data(), count, to.data())) << threads << " threads";
    EXPECT_TRUE(to == Narrowed(values)) << threads << " threads";
    for (size_t t = 1; t < static_cast<size_t>(threads); ++t) {
      for (const size_t at : {t * share - 1, t * share}) {
        const int64_t kept = values[at];
        values[at] = kInt32Max + 1;
        EXPECT_FALSE(ParallelNarrowToInt32(values.data(), count, to.data()))
            << "at " << at << ", " << threads << " threads";
        values[at] = kept;
      }
    }
    values[count - 1] = kInt32Min - 1;
    EXPECT_FALSE(ParallelNarrowToInt32(values.data(), count, to.data())) << threads << " threads";
  }
  PinnedStaging::SetHostThreads(PinnedStaging::DefaultHostThreads());
  EXPECT_EQ(PinnedStaging::HostThreads(), PinnedStaging::DefaultHostThreads());
}

// ParallelMemcpy shares the split: every byte of an odd size copied, across the shares' edges.
TEST(PinnedStagingNarrowing, ParallelMemcpyCopiesEveryByteOfAnOddSize) {
  const size_t bytes = (size_t{17} << 20) + 3;
  std::vector<unsigned char> from(bytes);
  for (size_t i = 0; i < bytes; ++i) from[i] = static_cast<unsigned char>(i * 131 + (i >> 20));
  std::vector<unsigned char> to(bytes, 0);
  ParallelMemcpy(to.data(), from.data(), bytes);
  EXPECT_TRUE(to == from);
}

// The narrowing replaces a memcpy into the pinned chunk: it should be no slower. Prints the
// rates (bytes read per second) of one piece, single-threaded and split, best of several runs.
// ---- On a device ----

class CudaPinnedStagingTest : public CudaContextTest {
 protected:
  void SetUp() override {
    CudaContextTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<PinnedStaging>> staging =
        PinnedStaging::Create(context_->stream());
    ASSERT_TRUE(staging.ok()) << staging.status();
    staging_ = *std::move(staging);
  }

  struct Delivered {
    std::vector<PinnedStaging::LandedPiece> pieces;
    std::vector<int64_t> values;  // as the device received them, widened back on the host
  };

  // UploadInPieces of `values`; each landed piece's bytes are copied (on the piece's stream, as a
  // consumer must) into a device buffer at the piece's offset, then read back.
  Delivered Upload(const std::vector<int64_t>& values) {
    Delivered delivered;
    const size_t count = values.size();
    const size_t slot_bytes = std::min(count, PinnedStaging::kPieceValues) * sizeof(int64_t);
    absl::StatusOr<DeviceBuffer> slots = context_->Allocate(2 * slot_bytes);
    absl::StatusOr<DeviceBuffer> landed = context_->Allocate(count * sizeof(int64_t));
    EXPECT_TRUE(slots.ok() && landed.ok());
    if (!slots.ok() || !landed.ok()) return delivered;
    const absl::Status status = staging_->UploadInPieces(
        values.data(), count, PinnedStaging::kPieceValues,
        {slots->data(), slots->as<char>() + slot_bytes},
        [&](const PinnedStaging::LandedPiece& piece) -> absl::Status {
          delivered.pieces.push_back(piece);
          const size_t width = piece.narrow ? sizeof(int32_t) : sizeof(int64_t);
          if (cudaMemcpyAsync(landed->as<int64_t>() + piece.first, piece.data, piece.count * width,
                              cudaMemcpyDeviceToDevice, piece.stream) != cudaSuccess) {
            return absl::InternalError("cudaMemcpyAsync");
          }
          return absl::OkStatus();
        });
    EXPECT_TRUE(status.ok()) << status;
    std::vector<int64_t> raw(count);
    EXPECT_TRUE(context_->Download(*landed, raw.data(), count * sizeof(int64_t)).ok());
    delivered.values.resize(count);
    for (const PinnedStaging::LandedPiece& piece : delivered.pieces) {
      const int64_t* at = raw.data() + piece.first;
      for (size_t i = 0; i < piece.count; ++i) {
        int32_t narrow = 0;
        std::memcpy(&narrow, reinterpret_cast<const int32_t*>(at) + i, sizeof(narrow));
        delivered.values[piece.first + i] = piece.narrow ? narrow : at[i];
      }
    }
    return delivered;
  }

  std::unique_ptr<PinnedStaging> staging_;
};

std::vector<bool> Widths(const std::vector<PinnedStaging::LandedPiece>& pieces) {
  std::vector<bool> narrow;
  for (const PinnedStaging::LandedPiece& piece : pieces) narrow.push_back(piece.narrow);
  return narrow;
}

TEST_F(CudaPinnedStagingTest, FittingValuesTravelNarrowInEveryPiece) {
  const size_t count = 2 * PinnedStaging::kPieceValues + 1001;
  const std::vector<int64_t> values = FittingValues(count);
  const Delivered delivered = Upload(values);
  ASSERT_EQ(delivered.pieces.size(), 3u);
  EXPECT_EQ(delivered.pieces[2].first, 2 * PinnedStaging::kPieceValues);
  EXPECT_EQ(delivered.pieces[2].count, 1001u);
  EXPECT_EQ(Widths(delivered.pieces), (std::vector<bool>{true, true, true}));
  EXPECT_TRUE(delivered.values == values);
}

TEST_F(CudaPinnedStagingTest, FromThePieceWithAWideValueOnEveryPieceIsWide) {
  const size_t count = 3 * PinnedStaging::kPieceValues;
  std::vector<int64_t> values = FittingValues(count);
  // The first value of the second piece: the last of the first piece stays narrow.
  values[PinnedStaging::kPieceValues] = kInt32Max + 1;
  const Delivered delivered = Upload(values);
  EXPECT_EQ(Widths(delivered.pieces), (std::vector<bool>{true, false, false}));
  EXPECT_TRUE(delivered.values == values);
}

TEST_F(CudaPinnedStagingTest, AWideLastValueMakesOnlyTheLastPieceWide) {
  const size_t count = 2 * PinnedStaging::kPieceValues + 3;
  std::vector<int64_t> values = FittingValues(count);
  values[count - 1] = std::numeric_limits<int64_t>::min();
  values[PinnedStaging::kPieceValues - 1] = kInt32Min;  // fits, at a piece's end
  const Delivered delivered = Upload(values);
  EXPECT_EQ(Widths(delivered.pieces), (std::vector<bool>{true, true, false}));
  EXPECT_TRUE(delivered.values == values);
}

TEST_F(CudaPinnedStagingTest, OneValueIsOnePiece) {
  for (const int64_t v : {kInt32Max, kInt32Max + 1}) {
    const Delivered delivered = Upload({v});
    ASSERT_EQ(delivered.pieces.size(), 1u);
    EXPECT_EQ(delivered.pieces[0].narrow, v == kInt32Max);
    EXPECT_EQ(delivered.values, std::vector<int64_t>{v});
  }
}

}  // namespace
}  // namespace matrixd::cuda
