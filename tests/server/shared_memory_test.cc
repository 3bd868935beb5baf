// Shared memory end to end on the CPU backend: real POSIX shared-memory objects made by the test
// are registered, operands are read from them and results written into them (bit for bit the
// inline answers), every bad reference and registration gets its status, and a region whose
// object goes away (a client process that died and was cleaned up) is dropped while the server
// keeps serving.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matrixd/v1/matrixd.grpc.pb.h"
#include "tests/server/random_values.h"
#include "tests/server/shared_memory_rpcs.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

// A shared-memory object of `bytes`, mapped here, unlinked when destroyed.
class TestObject {
 public:
  explicit TestObject(size_t bytes)
      : key_("/matrixd_test_" + std::to_string(getpid()) + "_" + std::to_string(counter_++)),
        bytes_(bytes) {
    const int fd = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    data_ =
        static_cast<std::byte*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    close(fd);
  }
  ~TestObject() {
    munmap(data_, bytes_);
    Unlink();
  }
  void Unlink() { shm_unlink(key_.c_str()); }
  const std::string& key() const { return key_; }
  std::byte* data() { return data_; }

 private:
  static inline int counter_ = 0;
  std::string key_;
  size_t bytes_;
  std::byte* data_ = nullptr;
};

v1::MatrixRef Ref(const std::string& region, uint64_t offset, int64_t rows, int64_t cols) {
  v1::MatrixRef ref;
  v1::SharedMemoryRef* shm = ref.mutable_shared_memory();
  shm->set_region(region);
  shm->set_offset(offset);
  shm->set_rows(rows);
  shm->set_cols(cols);
  shm->set_dtype(v1::DTYPE_FLOAT64);
  return ref;
}

class SharedMemoryTest : public ServerTest {
 protected:
  void SetUp() override {
    stub_ = v1::MatrixService::NewStub(
        grpc::CreateChannel(server().address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { Unregister(""); }

  grpc::Status Register(const std::string& name, const std::string& key, uint64_t offset,
                        uint64_t bytes) {
    return rpcs_.RegisterSystem(name, key, bytes, offset);
  }
  grpc::Status Unregister(const std::string& name) { return rpcs_.UnregisterSystem(name); }
  std::vector<std::string> Listed() {
    std::vector<std::string> names;
    const v1::ListSharedMemoryResponse listed = rpcs_.List();
    for (const auto& region : listed.regions()) names.push_back(region.name());
    return names;
  }
  grpc::Status Determinant(const v1::MatrixRef& ref, v1::DeterminantResponse* response) {
    grpc::ClientContext context;
    v1::DeterminantRequest request;
    *request.mutable_matrix_ref() = ref;
    return stub_->Determinant(&context, request, response);
  }

  std::unique_ptr<v1::MatrixService::Stub> stub_;
  SharedMemoryRpcs rpcs_{server().address()};
};

TEST_F(SharedMemoryTest, OperandsAndResultsInSharedMemoryMatchTheInlinePath) {
  constexpr int64_t kN = 40;
  constexpr size_t kBytes = kN * kN * sizeof(double);
  TestObject object(4 * kBytes);
  const std::vector<double> a = RandomValues(kN * kN, 1);
  const std::vector<double> b = RandomValues(kN * kN, 2);
  std::memcpy(object.data(), a.data(), kBytes);
  std::memcpy(object.data() + kBytes, b.data(), kBytes);
  ASSERT_TRUE(Register("mats", object.key(), 0, 4 * kBytes).ok());
  EXPECT_THAT(Listed(), ::testing::ElementsAre("mats"));

  v1::DeterminantResponse by_shm;
  ASSERT_TRUE(Determinant(Ref("mats", 0, kN, kN), &by_shm).ok());
  v1::DeterminantRequest inline_det;
  *inline_det.mutable_matrix() = MakeMatrix<double>(kN, kN, a);
  absl::StatusOr<v1::DeterminantResponse> by_value = client().Determinant(inline_det);
  ASSERT_TRUE(by_value.ok());
  EXPECT_EQ(by_shm.log_abs(), by_value->log_abs());
  EXPECT_EQ(by_shm.sign(), by_value->sign());

  // C = A B written into the third slot; the response carries no inline C.
  v1::MultiplyRequest multiply;
  *multiply.mutable_a_ref() = Ref("mats", 0, kN, kN);
  *multiply.mutable_b_ref() = Ref("mats", kBytes, kN, kN);
  (*multiply.mutable_result_options()->mutable_shared_memory_outputs())["c"] =
      Ref("mats", 2 * kBytes, kN, kN).shared_memory();
  absl::StatusOr<v1::MultiplyResponse> written = client().Multiply(multiply);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_FALSE(written->has_c());
  v1::MultiplyRequest inline_multiply;
  *inline_multiply.mutable_a() = MakeMatrix<double>(kN, kN, a);
  *inline_multiply.mutable_b() = MakeMatrix<double>(kN, kN, b);
  absl::StatusOr<v1::MultiplyResponse> inline_c = client().Multiply(inline_multiply);
  ASSERT_TRUE(inline_c.ok());
  EXPECT_EQ(std::memcmp(object.data() + 2 * kBytes, inline_c->c().data().data(), kBytes), 0);
}

// A batched LU with its factors and its pivots written into shared memory: the factors land in
// place, the pivots leave the response, and both equal the inline answer bit for bit.
TEST_F(SharedMemoryTest, BatchedFactorsAndPivotsGoIntoSharedMemory) {
  constexpr int64_t kBatch = 50;
  constexpr int64_t kN = 6;
  constexpr int64_t kRows = kBatch * kN;
  constexpr size_t kBytes = kRows * kN * sizeof(double);
  constexpr size_t kPivotBytes = kRows * sizeof(int64_t);
  TestObject object(2 * kBytes + kPivotBytes);
  const std::vector<double> a = RandomValues(kRows * kN, 3);
  std::memcpy(object.data(), a.data(), kBytes);
  ASSERT_TRUE(Register("lu", object.key(), 0, 2 * kBytes + kPivotBytes).ok());

  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_batch_count(kBatch);
  *request.mutable_matrix_ref() = Ref("lu", 0, kRows, kN);
  auto& outputs = *request.mutable_result_options()->mutable_shared_memory_outputs();
  outputs["lu"] = Ref("lu", kBytes, kRows, kN).shared_memory();
  v1::SharedMemoryRef pivots = Ref("lu", 2 * kBytes, kRows, 1).shared_memory();
  pivots.set_dtype(v1::DTYPE_INT64);
  outputs["permutation"] = pivots;
  absl::StatusOr<v1::FactorizeResponse> placed = client().Factorize(request);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_FALSE(placed->has_lu());
  EXPECT_EQ(placed->permutation_size(), 0);
  EXPECT_EQ(placed->singular_columns_size(), kBatch);  // not asked for: still inline

  v1::FactorizeRequest inline_request;
  inline_request.set_kind(v1::FACTORIZATION_KIND_LU);
  inline_request.set_batch_count(kBatch);
  *inline_request.mutable_matrix() = MakeMatrix<double>(kRows, kN, a);
  absl::StatusOr<v1::FactorizeResponse> by_value = client().Factorize(inline_request);
  ASSERT_TRUE(by_value.ok()) << by_value.status();
  EXPECT_EQ(std::memcmp(object.data() + kBytes, by_value->lu().data().data(), kBytes), 0);
  ASSERT_EQ(by_value->permutation_size(), kRows);
  EXPECT_EQ(std::memcmp(object.data() + 2 * kBytes, by_value->permutation().data(), kPivotBytes),
            0);

  // A pivot target of the wrong size or dtype is refused, naming the entry.
  v1::FactorizeRequest short_target = request;
  v1::SharedMemoryRef too_short = pivots;
  too_short.set_rows(kRows - 1);
  (*short_target.mutable_result_options()->mutable_shared_memory_outputs())["permutation"] =
      too_short;
  absl::StatusOr<v1::FactorizeResponse> refused = client().Factorize(short_target);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("shared_memory_outputs[\"permutation\"]"));
  v1::FactorizeRequest double_target = request;
  (*double_target.mutable_result_options()->mutable_shared_memory_outputs())["permutation"] =
      Ref("lu", 2 * kBytes, kRows, 1).shared_memory();
  refused = client().Factorize(double_target);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("int64 indices"));
}

TEST_F(SharedMemoryTest, BadRegistrationsAndReferencesNameTheProblem) {
  TestObject object(4096);
  EXPECT_EQ(Register("r", "/matrixd_no_such_object", 0, 64).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Register("r", "no_slash", 0, 64).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Register("r", object.key(), 4000, 200).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Register("r", object.key(), 0, 4096).ok());
  EXPECT_EQ(Register("r", object.key(), 0, 4096).error_code(), grpc::StatusCode::ALREADY_EXISTS);

  v1::DeterminantResponse response;
  grpc::Status status = Determinant(Ref("r", 4096 - 8, 2, 2), &response);  // past the end
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("runs past the end of region \"r\""));
  status = Determinant(Ref("r", 4, 2, 2), &response);  // misaligned
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("not a multiple of the 8-byte element"));
  status = Determinant(Ref("other", 0, 2, 2), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("matrix_ref.shared_memory.region \"other\""));

  // A result target too small for the result, and a name that is no result.
  v1::MultiplyRequest multiply;
  *multiply.mutable_a() = MakeMatrix<double>(3, 3, RandomValues(9, 3));
  *multiply.mutable_b() = MakeMatrix<double>(3, 3, RandomValues(9, 4));
  auto& outputs = *multiply.mutable_result_options()->mutable_shared_memory_outputs();
  outputs["c"] = Ref("r", 0, 2, 2).shared_memory();
  absl::StatusOr<v1::MultiplyResponse> product = client().Multiply(multiply);
  EXPECT_EQ(product.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(product.status().message(), HasSubstr("is 2x2 float64; the result is 3x3"));
  outputs.clear();
  outputs["x"] = Ref("r", 0, 3, 3).shared_memory();
  product = client().Multiply(multiply);
  EXPECT_EQ(product.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(product.status().message(), HasSubstr("has no result matrix \"x\"; it has c"));

  ASSERT_TRUE(Unregister("r").ok());
  EXPECT_EQ(Unregister("r").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Determinant(Ref("r", 0, 2, 2), &response).error_code(), grpc::StatusCode::NOT_FOUND);
  ExpectStillServing();
}

TEST_F(SharedMemoryTest, RegionOfADeadClientIsDroppedOnceItsObjectIsGone) {
  const std::string key = "/matrixd_test_child_" + std::to_string(getpid());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a client that makes its region, then dies without unregistering
    const int fd = shm_open(key.c_str(), O_CREAT | O_RDWR, 0600);
    _exit(fd >= 0 && ftruncate(fd, 1 << 20) == 0 ? 0 : 1);
  }
  int child_status = 0;
  ASSERT_EQ(waitpid(child, &child_status, 0), child);
  ASSERT_EQ(WEXITSTATUS(child_status), 0);
  ASSERT_TRUE(Register("dead", key, 0, 1 << 20).ok());
  v1::DeterminantResponse response;
  ASSERT_TRUE(Determinant(Ref("dead", 0, 4, 4), &response).ok());  // zeros: det 0
  EXPECT_EQ(response.sign(), 0);
  shm_unlink(key.c_str());  // the dead client's files are cleaned up
  EXPECT_THAT(Listed(), ::testing::IsEmpty());
  EXPECT_EQ(Determinant(Ref("dead", 0, 4, 4), &response).error_code(), grpc::StatusCode::NOT_FOUND);
  ExpectStillServing();
}

}  // namespace
}  // namespace matrixd::server::testing
