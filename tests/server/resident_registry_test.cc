// ResidentRegistry: handles, reads back, release, idle expiry, the limit, and spilling under
// device-memory pressure (a fake device backend and a real MemoryAdmission, no GPU).
#include "server/resident_registry.h"

#include <memory>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "core/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/fake_resident_backend.h"

namespace matrixd::server {
namespace {

using ::testing::HasSubstr;

Matrix Ramp(int64_t rows, int64_t cols, double start = 0.0) {
  std::vector<double> values(static_cast<size_t>(rows * cols));
  std::iota(values.begin(), values.end(), start);
  return Matrix::FromValues<double>(rows, cols, values);
}

std::vector<double> ReadAll(const ResidentLease& lease) {
  std::vector<double> values(static_cast<size_t>(lease.info().rows * lease.info().cols));
  EXPECT_TRUE(lease.Read(0, std::as_writable_bytes(std::span<double>(values))).ok());
  return values;
}

std::vector<double> ValuesOf(const Matrix& m) {
  return std::vector<double>(m.As<double>().begin(), m.As<double>().end());
}

class HostRegistryTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = MakeCpuBackend({.threads = 1});
  ResidentRegistry registry_{*backend_, {}, {.limit_bytes = 1 << 20, .ttl = absl::Minutes(5)}};
};

TEST_F(HostRegistryTest, KeptMatrixReadsBackAndHasA128BitHandle) {
  const Matrix m = Ramp(3, 5);
  absl::StatusOr<ResidentInfo> info = registry_.Keep(m, "ramp");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->handle.size(), 32u);
  EXPECT_EQ(info->handle.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(info->bytes, 3u * 5u * 8u);
  EXPECT_EQ(info->device, "cpu");
  EXPECT_EQ(info->label, "ramp");
  absl::StatusOr<ResidentLease> lease = registry_.Acquire(info->handle, "matrix_ref");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(ReadAll(*lease), ValuesOf(m));
  EXPECT_EQ(lease->view().space, MemorySpace::kHost);
  EXPECT_EQ(registry_.resident_bytes(), 120u);
}

TEST_F(HostRegistryTest, HandlesAreDistinct) {
  std::set<std::string> handles;
  for (int i = 0; i < 50; ++i) handles.insert(registry_.Keep(Ramp(1, 1), "")->handle);
  EXPECT_EQ(handles.size(), 50u);
}

TEST_F(HostRegistryTest, UnknownHandleIsNotFoundNamingTheField) {
  absl::StatusOr<ResidentLease> lease =
      registry_.Acquire("0123456789abcdef0123456789abcdef", "a_ref");
  EXPECT_EQ(lease.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(lease.status().message(), HasSubstr("a_ref.handle"));
}

TEST_F(HostRegistryTest, ReleasedHandleIsNotFoundAndItsBytesAreGivenBack) {
  const std::string handle = registry_.Keep(Ramp(4, 4), "")->handle;
  absl::StatusOr<uint64_t> freed = registry_.Release(handle);
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 128u);
  EXPECT_EQ(registry_.resident_bytes(), 0u);
  EXPECT_EQ(registry_.Acquire(handle, "matrix_ref").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry_.Release(handle).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(registry_.List().empty());
}

TEST_F(HostRegistryTest, ReleaseWhileInUseKeepsTheBytesUntilTheOperationEnds) {
  const Matrix m = Ramp(2, 2);
  const std::string handle = registry_.Keep(m, "")->handle;
  absl::StatusOr<ResidentLease> lease = registry_.Acquire(handle, "matrix_ref");
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(registry_.Release(handle).ok());
  EXPECT_EQ(ReadAll(*lease), ValuesOf(m));
  EXPECT_EQ(registry_.resident_bytes(), 32u);
  lease = absl::NotFoundError("dropped");  // ends the lease
  EXPECT_EQ(registry_.resident_bytes(), 0u);
}

TEST_F(HostRegistryTest, IdleMatricesExpireAfterTheTtlButNotWhileInUse) {
  const std::string idle = registry_.Keep(Ramp(1, 2), "idle")->handle;
  const std::string busy = registry_.Keep(Ramp(1, 2), "busy")->handle;
  absl::StatusOr<ResidentLease> lease = registry_.Acquire(busy, "matrix_ref");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(registry_.ExpireIdle(absl::Now() + absl::Minutes(4)), 0);
  EXPECT_EQ(registry_.ExpireIdle(absl::Now() + absl::Minutes(6)), 1);
  EXPECT_EQ(registry_.Acquire(idle, "m").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry_.List().size(), 1u);
  EXPECT_EQ(registry_.List()[0].handle, busy);
}

TEST_F(HostRegistryTest, ListIsOldestFirst) {
  const std::string first = registry_.Keep(Ramp(1, 1), "first")->handle;
  const std::string second = registry_.Keep(Ramp(1, 1), "second")->handle;
  const std::vector<ResidentInfo> list = registry_.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].handle, first);
  EXPECT_EQ(list[1].handle, second);
}

TEST_F(HostRegistryTest, MatrixAboveTheLimitIsRefusedSayingWhatIsFree) {
  ASSERT_TRUE(registry_.Keep(Ramp(256, 256), "").ok());  // 512 KiB of the 1 MiB limit
  absl::StatusOr<ResidentInfo> refused = registry_.Keep(Ramp(256, 384), "");  // 768 KiB
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("524288 of the 1048576 bytes"));
  EXPECT_EQ(registry_.resident_bytes(), 524288u);
  EXPECT_EQ(registry_.List().size(), 1u);
}

TEST_F(HostRegistryTest, NonFiniteEntriesAreRecorded) {
  Matrix m = Ramp(2, 2);
  m.As<double>()[3] = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(registry_.Keep(m, "")->finite);
  EXPECT_TRUE(registry_.Keep(Ramp(2, 2), "")->finite);
}

TEST_F(HostRegistryTest, ConcurrentUsersOfOneHandleReadTheSameBytes) {
  const Matrix m = Ramp(64, 64);
  const std::string handle = registry_.Keep(m, "")->handle;
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        absl::StatusOr<ResidentLease> lease = registry_.Acquire(handle, "matrix_ref");
        if (lease.ok() && ReadAll(*lease) == ValuesOf(m)) ++right;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(right.load(), 200);
}

// Device memory of 3 KiB in admission: three 1 KiB matrices fill it.
// A factorization-shaped entry: a 4x4 factor with a 1x4 INT64 part and a 4x4 part.
struct FactorizationParts {
  Matrix factor = Ramp(4, 4);
  std::vector<int64_t> permutation = {2, 0, 3, 1};
  Matrix input = Ramp(4, 4, 100.0);
  std::vector<ResidentPart> parts() const {
    return {{"permutation",
             {.rows = 1,
              .cols = 4,
              .dtype = DType::kInt64,
              .data = reinterpret_cast<const std::byte*>(permutation.data())}},
            {"input", input.view()}};
  }
};

TEST_F(HostRegistryTest, FactorizationKeepsItsPartsUnderOneHandle) {
  const FactorizationParts kept;
  absl::StatusOr<ResidentInfo> info = registry_.KeepFactorization(
      kept.factor.view(), kept.parts(),
      {.kind = FactorizationKind::kLu, .singular_column = 2, .input_kept = true}, "lu");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->bytes, 4u * 4u * 8u + 4u * 8u + 4u * 4u * 8u);
  EXPECT_EQ(registry_.resident_bytes(), info->bytes);
  ASSERT_TRUE(info->factorization.has_value());
  EXPECT_EQ(info->factorization->singular_column, 2);
  absl::StatusOr<ResidentLease> lease = registry_.Acquire(info->handle, "factorization");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(ReadAll(*lease), ValuesOf(kept.factor));
  const std::optional<MatrixView> permutation = lease->part("permutation");
  ASSERT_TRUE(permutation.has_value());
  EXPECT_EQ(
      std::vector<int64_t>(permutation->As<int64_t>().begin(), permutation->As<int64_t>().end()),
      kept.permutation);
  const std::optional<MatrixView> input = lease->part("input");
  ASSERT_TRUE(input.has_value());
  EXPECT_EQ(std::vector<double>(input->As<double>().begin(), input->As<double>().end()),
            ValuesOf(kept.input));
  EXPECT_FALSE(lease->part("r").has_value());
  EXPECT_FALSE(registry_.Keep(Ramp(2, 2), "plain")->factorization.has_value());
}

TEST_F(HostRegistryTest, ReleasedFactorizationGivesBackEveryPartsBytes) {
  const FactorizationParts kept;
  absl::StatusOr<ResidentInfo> info = registry_.KeepFactorization(
      kept.factor.view(), kept.parts(), {.kind = FactorizationKind::kLu}, "lu");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(*registry_.Release(info->handle), info->bytes);
  EXPECT_EQ(registry_.resident_bytes(), 0u);
}

class DeviceRegistryTest : public ::testing::Test {
 protected:
  FakeResidentBackend backend_;
  MemoryAdmission admission_{3 * 1024};
  ResidentRegistry registry_{backend_, {&admission_}, {.limit_bytes = 1 << 20}};
};

TEST_F(DeviceRegistryTest, ResidentBytesAreReservedInAdmission) {
  ASSERT_TRUE(registry_.Keep(Ramp(16, 8), "").ok());  // 1 KiB
  EXPECT_EQ(admission_.reserved(), 1024u);
  const std::string handle = registry_.List()[0].handle;
  ASSERT_TRUE(registry_.Release(handle).ok());
  EXPECT_EQ(admission_.reserved(), 0u);
}

TEST_F(DeviceRegistryTest, FullDeviceSpillsTheLeastRecentlyUsedAndRestoresOnUse) {
  const Matrix first = Ramp(16, 8, 0.0);
  const std::string a = registry_.Keep(first, "a")->handle;
  const std::string b = registry_.Keep(Ramp(16, 8, 1000.0), "b")->handle;
  const std::string c = registry_.Keep(Ramp(16, 8, 2000.0), "c")->handle;
  ASSERT_TRUE(registry_.Acquire(a, "m").ok());  // a is now more recent than b
  // A fourth needs room: b, the least recently used, goes to host memory.
  const std::string d = registry_.Keep(Ramp(16, 8, 3000.0), "d")->handle;
  EXPECT_EQ(backend_.spills.load(), 1);
  EXPECT_EQ(registry_.spills(), 1u);
  EXPECT_EQ(admission_.reserved(), 3u * 1024u);
  for (const ResidentInfo& info : registry_.List()) {
    EXPECT_EQ(info.spilled, info.handle == b) << info.label;
  }
  // Using b brings it back (spilling another) with its bytes intact.
  absl::StatusOr<ResidentLease> lease = registry_.Acquire(b, "m");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(ReadAll(*lease), ValuesOf(Ramp(16, 8, 1000.0)));
  EXPECT_EQ(registry_.restores(), 1u);
  EXPECT_EQ(backend_.spills.load(), 2);
  EXPECT_EQ(admission_.reserved(), 3u * 1024u);
  static_cast<void>(c);
  static_cast<void>(d);
}

TEST_F(DeviceRegistryTest, MatricesInUseAreNeverSpilled) {
  std::vector<ResidentLease> leases;
  for (int i = 0; i < 3; ++i) {
    const std::string handle = registry_.Keep(Ramp(16, 8), "")->handle;
    leases.push_back(*registry_.Acquire(handle, "m"));
  }
  absl::StatusOr<ResidentInfo> refused = registry_.Keep(Ramp(16, 8), "");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("0 of the 3072 bytes of device memory"));
  EXPECT_EQ(backend_.spills.load(), 0);
}

TEST_F(DeviceRegistryTest, SpillForRoomFreesAdmissionForAJob) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(registry_.Keep(Ramp(16, 8), "").ok());
  EXPECT_FALSE(admission_.TryReserve(2048));
  EXPECT_EQ(registry_.SpillForRoom(0, 2048), 2048u);
  EXPECT_TRUE(admission_.TryReserve(2048));
  admission_.Unreserve(2048);
}

TEST_F(DeviceRegistryTest, FactorizationSpillsAndRestoresWithItsParts) {
  const FactorizationParts kept;  // 288 bytes in three matrices
  absl::StatusOr<ResidentInfo> info = registry_.KeepFactorization(
      kept.factor.view(), kept.parts(), {.kind = FactorizationKind::kLu}, "lu");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(admission_.reserved(), 288u);
  EXPECT_EQ(registry_.SpillForRoom(0, 3 * 1024), 288u);
  EXPECT_EQ(backend_.spills.load(), 3) << "the factor and both parts";
  EXPECT_EQ(admission_.reserved(), 0u);
  absl::StatusOr<ResidentLease> lease = registry_.Acquire(info->handle, "factorization");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(admission_.reserved(), 288u);
  const std::optional<MatrixView> input = lease->part("input");
  ASSERT_TRUE(input.has_value());
  EXPECT_EQ(std::vector<double>(input->As<double>().begin(), input->As<double>().end()),
            ValuesOf(kept.input));
}

}  // namespace
}  // namespace matrixd::server
