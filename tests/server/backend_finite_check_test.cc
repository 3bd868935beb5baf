// A backend that checks a batched LU's operand for NaN/Inf itself and writes the pivots straight
// into their shared-memory target (what the CUDA backend does, factorize_batch.h), played by the
// CPU backend: the server leaves the scan to it (Backend::FactorizeChecksFinite) and the client
// gets the status the host check gives; pivots written in place reach the region and stay out of
// the response, bit for bit those of the inline path.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/backend_wrapper.h"
#include "core/cpu/cpu_backend.h"
#include "core/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/random_values.h"
#include "tests/server/shared_memory_rpcs.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

class CheckingBackend final : public BackendWrapper {
 public:
  CheckingBackend() : BackendWrapper(MakeCpuBackend({.threads = 1})) {}

  bool FactorizeChecksFinite(const MatrixView& /*a*/, const FactorizeOptions& options,
                             const MatrixView* rhs) const override {
    return options.batch_count > 0 && options.kind == FactorizationKind::kLu && rhs == nullptr;
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    ++factorize_calls;
    if (FactorizeChecksFinite(a, options, rhs)) {
      if (absl::Status s = ValidateFactorize(a, options, rhs, {}); !s.ok()) return s;
    }
    absl::StatusOr<FactorizeResult> result = BackendWrapper::Factorize(a, options, rhs, control);
    if (!result.ok()) return result;
    const std::span<int64_t> target =
        options.destinations.Indices("permutation", result->permutation.size());
    if (!target.empty()) {
      std::copy(result->permutation.begin(), result->permutation.end(), target.begin());
      result->permutation.clear();
      result->permutation_in_destination = true;
    }
    return result;
  }

  std::atomic<int> factorize_calls = 0;
};

constexpr int64_t kBatch = 40;
constexpr int64_t kN = 5;
constexpr int64_t kRows = kBatch * kN;

v1::FactorizeRequest BatchedLu(const std::vector<double>& a) {
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_batch_count(kBatch);
  *request.mutable_matrix() = MakeMatrix<double>(kRows, kN, a);
  return request;
}

class BackendFiniteCheckTest : public ServerTest {
 protected:
  BackendFiniteCheckTest()
      : backend_(new CheckingBackend),
        server_(StartTestServer(std::unique_ptr<Backend>(backend_))),
        client_(server_->address(), {.deadline = absl::Seconds(20)}) {}

  CheckingBackend* backend_;  // owned by server_
  std::unique_ptr<MatrixServer> server_;
  Client client_;
};

TEST_F(BackendFiniteCheckTest, NonFiniteOperandGetsTheHostCheckStatusFromTheBackend) {
  std::vector<double> a = RandomValues(kRows * kN, 1);
  a[static_cast<size_t>((33 * kN + 2) * kN + 4)] = std::nan("");
  a[static_cast<size_t>((37 * kN + 1) * kN + 0)] = INFINITY;
  const absl::StatusOr<v1::FactorizeResponse> checked = client_.Factorize(BatchedLu(a));
  EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(checked.status().message(),
              HasSubstr("matrix[" + std::to_string(33 * kN + 2) + ", 4] is not finite"));
  EXPECT_EQ(backend_->factorize_calls.load(), 1);  // the server did not refuse it first
  // The plain CPU server scans on the host: the same status.
  const absl::StatusOr<v1::FactorizeResponse> scanned = client().Factorize(BatchedLu(a));
  EXPECT_EQ(scanned.status(), checked.status());

  // With a right-hand side the server still scans (the backend does not claim it).
  v1::FactorizeRequest with_rhs = BatchedLu(a);
  *with_rhs.mutable_rhs() = MakeMatrix<double>(kRows, 1, RandomValues(kRows, 2));
  const absl::StatusOr<v1::FactorizeResponse> refused = client_.Factorize(with_rhs);
  EXPECT_EQ(refused.status(), scanned.status());
  EXPECT_EQ(backend_->factorize_calls.load(), 1);
}

TEST_F(BackendFiniteCheckTest, PivotsWrittenInPlaceReachSharedMemoryBitForBit) {
  constexpr size_t kBytes = kRows * kN * sizeof(double);
  constexpr size_t kPivotBytes = kRows * sizeof(int64_t);
  constexpr size_t kTotal = 2 * kBytes + kPivotBytes;
  const std::string key = "/matrixd_finite_test_" + std::to_string(getpid());
  const int fd = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(ftruncate(fd, kTotal), 0);
  auto* data =
      static_cast<std::byte*>(mmap(nullptr, kTotal, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  ASSERT_NE(data, MAP_FAILED);
  const std::vector<double> a = RandomValues(kRows * kN, 3);
  std::memcpy(data, a.data(), kBytes);
  SharedMemoryRpcs rpcs(server_->address());
  ASSERT_TRUE(rpcs.RegisterSystem("batch", key, kTotal).ok());

  auto ref = [](uint64_t offset, int64_t cols, v1::DType dtype) {
    v1::SharedMemoryRef shm;
    shm.set_region("batch");
    shm.set_offset(offset);
    shm.set_rows(kRows);
    shm.set_cols(cols);
    shm.set_dtype(dtype);
    return shm;
  };
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_batch_count(kBatch);
  *request.mutable_matrix_ref()->mutable_shared_memory() = ref(0, kN, v1::DTYPE_FLOAT64);
  auto& outputs = *request.mutable_result_options()->mutable_shared_memory_outputs();
  outputs["lu"] = ref(kBytes, kN, v1::DTYPE_FLOAT64);
  outputs["permutation"] = ref(2 * kBytes, 1, v1::DTYPE_INT64);
  const absl::StatusOr<v1::FactorizeResponse> placed = client_.Factorize(request);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_FALSE(placed->has_lu());
  EXPECT_EQ(placed->permutation_size(), 0);

  const absl::StatusOr<v1::FactorizeResponse> by_value = client().Factorize(BatchedLu(a));
  ASSERT_TRUE(by_value.ok()) << by_value.status();
  EXPECT_EQ(std::memcmp(data + kBytes, by_value->lu().data().data(), kBytes), 0);
  ASSERT_EQ(by_value->permutation_size(), kRows);
  EXPECT_EQ(std::memcmp(data + 2 * kBytes, by_value->permutation().data(), kPivotBytes), 0);

  EXPECT_TRUE(rpcs.UnregisterSystem("batch").ok());
  munmap(data, kTotal);
  shm_unlink(key.c_str());
}

}  // namespace
}  // namespace matrixd::server::testing
