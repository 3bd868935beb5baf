#include "core/fault_countdown.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd {
namespace {

TEST(FaultCountdown, DisarmedNeverFires) {
  FaultCountdown countdown;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(countdown.Fire());
  EXPECT_FALSE(countdown.armed());
  EXPECT_EQ(countdown.fired(), 0);
}

TEST(FaultCountdown, FiresAtTheNthCheckOnlyOnce) {
  FaultCountdown countdown;
  countdown.Arm(3);
  EXPECT_TRUE(countdown.armed());
  EXPECT_FALSE(countdown.Fire());
  EXPECT_FALSE(countdown.Fire());
  EXPECT_TRUE(countdown.Fire());
  EXPECT_FALSE(countdown.armed());
  EXPECT_FALSE(countdown.Fire());
  EXPECT_EQ(countdown.fired(), 1);
}

TEST(FaultCountdown, DisarmAndNonPositiveArmStopIt) {
  FaultCountdown countdown;
  countdown.Arm(1);
  countdown.Disarm();
  EXPECT_FALSE(countdown.Fire());
  countdown.Arm(0);
  EXPECT_FALSE(countdown.Fire());
  countdown.Arm(-4);
  EXPECT_FALSE(countdown.Fire());
  EXPECT_EQ(countdown.fired(), 0);
}

TEST(FaultCountdown, ConcurrentChecksFireExactlyOnce) {
  FaultCountdown countdown;
  countdown.Arm(500);
  std::atomic<int> fired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (countdown.Fire()) fired.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(fired.load(), 1);
  EXPECT_EQ(countdown.fired(), 1);
}

}  // namespace
}  // namespace matrixd
