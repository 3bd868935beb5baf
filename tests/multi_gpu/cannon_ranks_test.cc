// The pool of Cannon's per-GPU ranks (core/multi_gpu/cannon_ranks.h): a set given back after a
// product serves the next one on the same GPUs and limit; a set not kept is not reused; another
// key gets its own set; products on a reused set stay right. Skips without a CUDA device.
#include "core/multi_gpu/cannon_ranks.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "core/multi_gpu/cannon_gemm.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"
#include "tests/multi_gpu/gpu_devices.h"

namespace matrixd::multi_gpu {
namespace {

using testing::DeviceCount;
using testing::FirstDevices;

TEST(RankSetLease, AKeptSetServesTheNextProductOnTheSameGpus) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<int> gpus = FirstDevices(devices);
  // A limit of its own, so that no other test's sets are in the pool under this key.
  const DeviceMemoryLimit limit{.bytes = 0, .fraction = 0.8125};
  {
    auto discarded = RankSetLease::Acquire(gpus, limit);
    ASSERT_TRUE(discarded.ok()) << discarded.status();
    EXPECT_FALSE(discarded->reused());
    EXPECT_EQ(discarded->ranks().size(), gpus.size());
  }  // not kept: destroyed
  {
    auto fresh = RankSetLease::Acquire(gpus, limit);
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    EXPECT_FALSE(fresh->reused()) << "a set that was not kept came back";
    fresh->Keep();
  }
  auto again = RankSetLease::Acquire(gpus, limit);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->reused());
  ASSERT_EQ(again->ranks().size(), gpus.size());
  for (size_t r = 0; r < gpus.size(); ++r) EXPECT_EQ(again->ranks()[r]->device, gpus[r]);
  // While it is lent, the same key gets another set.
  auto second = RankSetLease::Acquire(gpus, limit);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->reused());
  // Another limit is another key.
  auto other = RankSetLease::Acquire(gpus, DeviceMemoryLimit{.bytes = 0, .fraction = 0.8126});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_FALSE(other->reused());
}

TEST(RankSetLease, ProductsOnAReusedSetEqualTheFirst) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<int> gpus = FirstDevices(devices);
  const Matrix a = testing::RandomMatrix<double>(700, 300, 11);
  const Matrix b = testing::RandomMatrix<double>(300, 500, 12);
  auto first = CannonGemm(gpus, a.view(), b.view());
  ASSERT_TRUE(first.ok()) << first.status();
  for (int run = 0; run < 3; ++run) {
    auto next = CannonGemm(gpus, a.view(), b.view());
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_EQ(next->As<double>().size(), first->As<double>().size());
    EXPECT_TRUE(std::equal(next->As<double>().begin(), next->As<double>().end(),
                           first->As<double>().begin()))
        << "run " << run;
  }
}

}  // namespace
}  // namespace matrixd::multi_gpu
