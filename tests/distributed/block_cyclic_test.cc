// The block-cyclic arithmetic alone (no MPI): grid shapes, local extents, pack/unpack.
#include "core/distributed/block_cyclic.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd::distributed {
namespace {

TEST(ChooseGridShape, MostNearlySquare) {
  EXPECT_EQ(ChooseGridShape(1).rows, 1);
  EXPECT_EQ(ChooseGridShape(2).cols, 2);
  EXPECT_EQ(ChooseGridShape(4).rows, 2);
  EXPECT_EQ(ChooseGridShape(4).cols, 2);
  EXPECT_EQ(ChooseGridShape(6).rows, 2);
  EXPECT_EQ(ChooseGridShape(6).cols, 3);
  EXPECT_EQ(ChooseGridShape(7).rows, 1);
  EXPECT_EQ(ChooseGridShape(8).rows, 2);
  EXPECT_EQ(ChooseGridShape(8).cols, 4);
}

TEST(LocalExtent, PartsAddUpAndMatchOwnership) {
  for (int64_t n : {0, 1, 3, 7, 64, 65, 130}) {
    for (int procs : {1, 2, 3, 4}) {
      for (int64_t block : {1, 4, 64}) {
        int64_t total = 0;
        std::vector<int64_t> owned(static_cast<size_t>(procs), 0);
        for (int64_t i = 0; i < n; ++i) {
          const int owner = OwnerOf(i, block, procs);
          EXPECT_EQ(LocalIndexOf(i, block, procs), owned[static_cast<size_t>(owner)]);
          ++owned[static_cast<size_t>(owner)];
        }
        for (int p = 0; p < procs; ++p) {
          EXPECT_EQ(LocalExtent(n, block, p, procs), owned[static_cast<size_t>(p)])
              << "n " << n << " block " << block << " procs " << procs << " p " << p;
          total += LocalExtent(n, block, p, procs);
        }
        EXPECT_EQ(total, n);
      }
    }
  }
}

TEST(PackLocal, UnpackOfEveryRankRestoresTheMatrix) {
  const BlockCyclicLayout layout{.rows = 11, .cols = 7, .block = 3, .grid = {2, 3}};
  std::vector<double> global(11 * 7);
  std::iota(global.begin(), global.end(), 1.0);
  std::vector<double> restored(global.size(), 0.0);
  int64_t elements = 0;
  for (int rank = 0; rank < layout.grid.size(); ++rank) {
    std::vector<double> local(static_cast<size_t>(layout.LocalElements(rank)));
    elements += layout.LocalElements(rank);
    PackLocal(layout, rank, reinterpret_cast<const std::byte*>(global.data()), sizeof(double),
              reinterpret_cast<std::byte*>(local.data()));
    UnpackLocal(layout, rank, reinterpret_cast<const std::byte*>(local.data()), sizeof(double),
                reinterpret_cast<std::byte*>(restored.data()));
  }
  EXPECT_EQ(elements, 11 * 7);
  EXPECT_EQ(restored, global);
}

TEST(PackLocal, LocalPartIsColumnMajorInGlobalOrder) {
  // 1x2 grid, block 2, 3x5: rank 1 owns global columns 2 and 3, all rows.
  const BlockCyclicLayout layout{.rows = 3, .cols = 5, .block = 2, .grid = {1, 2}};
  std::vector<double> global(15);
  std::iota(global.begin(), global.end(), 0.0);  // global[i][j] = 5 i + j
  std::vector<double> local(static_cast<size_t>(layout.LocalElements(1)));
  ASSERT_EQ(local.size(), 6u);
  PackLocal(layout, 1, reinterpret_cast<const std::byte*>(global.data()), sizeof(double),
            reinterpret_cast<std::byte*>(local.data()));
  EXPECT_EQ(local, (std::vector<double>{2, 7, 12, 3, 8, 13}));
}

}  // namespace
}  // namespace matrixd::distributed
