// The column arithmetic of the GPU's staged det mod p (core/cuda/modular_lu_stages.h), on the
// host: the piece sizes, and that the stages of every order and piece size factor each panel once,
// after all its columns landed, and give every column each earlier panel's update exactly once,
// in panel order, as the LU after the whole upload does.
#include "core/cuda/modular_lu_stages.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

constexpr int64_t kPanel = 128;
constexpr int64_t kChunkValues = int64_t{4} << 20;  // PinnedStaging::kPieceValues

TEST(StagedPieceRows, DefaultFillsAChunkAndRequestsAreClamped) {
  EXPECT_EQ(StagedPieceRows(4096, 0, kChunkValues), 1024);
  EXPECT_EQ(StagedPieceRows(4096, 256, kChunkValues), 256);
  EXPECT_EQ(StagedPieceRows(4096, 5000, kChunkValues), 1024);
  EXPECT_EQ(StagedPieceRows(1000, 0, kChunkValues), 1000);  // the whole matrix fits one piece
  EXPECT_EQ(StagedPieceRows(1, 0, kChunkValues), 1);
  EXPECT_EQ(StagedPieceRows(3000, 0, kChunkValues), 1398);
  // A row longer than a piece still goes one row a piece.
  EXPECT_EQ(StagedPieceRows(100, 0, 50), 1);
}

// Automatic pieces overlap up to n = 4096 (4 pieces of a 4 Mi-value chunk), not beyond.
TEST(OverlapPays, AtMostFourAutomaticPieces) {
  constexpr int64_t kChunk = int64_t{4} << 20;
  EXPECT_TRUE(OverlapPays(4096, StagedPieceRows(4096, 0, kChunk)));
  EXPECT_TRUE(OverlapPays(1000, StagedPieceRows(1000, 0, kChunk)));
  EXPECT_TRUE(OverlapPays(1, StagedPieceRows(1, 0, kChunk)));
  EXPECT_FALSE(OverlapPays(4097, StagedPieceRows(4097, 0, kChunk)));
  EXPECT_FALSE(OverlapPays(8192, StagedPieceRows(8192, 0, kChunk)));
  EXPECT_TRUE(OverlapPays(400, 100));
  EXPECT_FALSE(OverlapPays(401, 100));
}

TEST(FactorableEnd, StopsAtTheLastPanelInsideTheLandedColumns) {
  EXPECT_EQ(FactorableEnd(0, 1024, 4096, kPanel), 1024);
  EXPECT_EQ(FactorableEnd(0, 1000, 4096, kPanel), 896);
  EXPECT_EQ(FactorableEnd(896, 1000, 4096, kPanel), 896);
  EXPECT_EQ(FactorableEnd(0, 127, 127, kPanel), 127);  // the last panel is narrower
  EXPECT_EQ(FactorableEnd(0, 1025, 1025, kPanel), 1025);
  EXPECT_EQ(FactorableEnd(1024, 1025, 1025, kPanel), 1025);
  EXPECT_EQ(FactorableEnd(0, 0, 10, kPanel), 0);
}

TEST(PlanColumnStages, PiecesTileTheColumnsAndTheLastStageFactorsAll) {
  const std::vector<ColumnStage> stages = PlanColumnStages(2100, 1024, kPanel);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].begin, 0);
  EXPECT_EQ(stages[0].end, 1024);
  EXPECT_EQ(stages[0].factored, 0);
  EXPECT_EQ(stages[0].factor_end, 1024);
  EXPECT_EQ(stages[1].end, 2048);
  EXPECT_EQ(stages[1].factored, 1024);
  EXPECT_EQ(stages[1].factor_end, 2048);
  EXPECT_EQ(stages[2].begin, 2048);
  EXPECT_EQ(stages[2].end, 2100);
  EXPECT_EQ(stages[2].factor_end, 2100);
}

// Replays the stages as BalancedLu::Advance queues them and records, per column, the panels whose
// update it took, in order; each panel must be factored once, with all its columns landed and all
// earlier panels' updates in.
TEST(PlanColumnStages, EveryColumnTakesEveryEarlierPanelOnceInOrder) {
  for (const int64_t n : {1, 2, 127, 128, 129, 1000, 1023, 1024, 1025, 2100, 4096}) {
    for (const int64_t requested : {0, 1, 100, 128, 256, 300, 512, 1024}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " piece rows " << requested);
      const int64_t rows = StagedPieceRows(n, requested, kChunkValues);
      std::vector<std::vector<int64_t>> updates(static_cast<size_t>(n));  // panel starts
      std::vector<int> factored(static_cast<size_t>(n), 0);               // by panel start
      int64_t landed = 0;
      int64_t done = 0;
      for (const ColumnStage& stage : PlanColumnStages(n, rows, kPanel)) {
        EXPECT_EQ(stage.begin, landed);
        EXPECT_EQ(stage.factored, done);
        for (int64_t k = 0; k < stage.factored; k += kPanel) {  // deferred work
          for (int64_t c = stage.begin; c < stage.end; ++c) updates[c].push_back(k);
        }
        landed = stage.end;
        for (int64_t k = stage.factored; k < stage.factor_end; k += kPanel) {
          const int64_t end = std::min(n, k + kPanel);
          ASSERT_LE(end, landed);
          ++factored[k];
          for (int64_t c = k; c < end; ++c) {
            // Its columns have taken exactly the panels before it.
            ASSERT_EQ(updates[c].size(), static_cast<size_t>(k / kPanel));
          }
          for (int64_t c = end; c < landed; ++c) updates[c].push_back(k);  // cut at `landed`
        }
        done = stage.factor_end;
      }
      EXPECT_EQ(landed, n);
      EXPECT_EQ(done, n);
      for (int64_t k = 0; k < n; k += kPanel) EXPECT_EQ(factored[k], 1) << "panel " << k;
      for (int64_t c = 0; c < n; ++c) {
        std::vector<int64_t> expected;
        for (int64_t k = 0; k + kPanel <= c; k += kPanel) expected.push_back(k);
        ASSERT_EQ(updates[c], expected) << "column " << c;
      }
    }
  }
}

}  // namespace
}  // namespace matrixd::cuda
