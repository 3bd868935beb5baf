// Shared-memory regions belong to the client that registered them
// (server/shared_memory_registry.h): names are per client, another client's region is NOT_FOUND,
// and max_shm_regions caps a client.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/shared_memory_registry.h"

namespace matrixd::server {
namespace {

using ::testing::HasSubstr;

// A POSIX shared-memory object of `bytes`, unlinked when destroyed.
class ShmObject {
 public:
  explicit ShmObject(size_t bytes)
      : key_(absl::StrCat("/matrixd-ownership-test-", getpid(), "-", counter_++)) {
    const int fd = shm_open(key_.c_str(), O_CREAT | O_RDWR | O_EXCL, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    close(fd);
  }
  ~ShmObject() { shm_unlink(key_.c_str()); }
  const std::string& key() const { return key_; }

 private:
  static inline int counter_ = 0;
  std::string key_;
};

TEST(SharedMemoryOwnership, AnotherClientsRegionIsNotFound) {
  ShmObject object(4096);
  SharedMemoryRegistry registry(nullptr);
  ASSERT_TRUE(registry.Register("inputs", object.key(), 0, 4096, "alice").ok());
  const SharedMemoryReference reference{
      .region = "inputs", .offset = 0, .rows = 2, .cols = 2, .dtype = DType::kFloat64};
  EXPECT_TRUE(registry.Resolve(reference, "matrix_ref", "alice").ok());
  EXPECT_EQ(registry.Resolve(reference, "matrix_ref", "bob").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(registry.List("bob").empty());
  ASSERT_EQ(registry.List("alice").size(), 1u);
  EXPECT_EQ(registry.Unregister("inputs", "bob").status().code(), absl::StatusCode::kNotFound);
  // Names are per client: bob may use the same name for a region of his own.
  EXPECT_TRUE(registry.Register("inputs", object.key(), 0, 4096, "bob").ok());
  // Unregistering all of bob's regions leaves alice's.
  absl::StatusOr<int> dropped = registry.Unregister("", "bob");
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(*dropped, 1);
  EXPECT_EQ(registry.List("alice").size(), 1u);
}

TEST(SharedMemoryOwnership, MaxShmRegionsCapsOneClient) {
  ShmObject object(4096);
  SharedMemoryRegistry registry(nullptr);
  ASSERT_TRUE(registry.Register("a", object.key(), 0, 1024, "alice", 2).ok());
  ASSERT_TRUE(registry.Register("b", object.key(), 0, 1024, "alice", 2).ok());
  const absl::Status third = registry.Register("c", object.key(), 0, 1024, "alice", 2).status();
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(third.message()), HasSubstr("quota max_shm_regions"));
  EXPECT_TRUE(registry.Register("c", object.key(), 0, 1024, "bob", 2).ok());
}

}  // namespace
}  // namespace matrixd::server
