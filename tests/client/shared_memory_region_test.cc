// matrixd::SharedMemoryRegion and the Client's shared-memory calls against the real server (CPU
// backend): a region is made, mapped and registered, and removed everywhere when the object
// dies; views place matrices in it; operands read from it and results written into it equal the
// inline answers bit for bit.
#include "client/shared_memory_region.h"

#include <unistd.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd {
namespace {

using ::matrixd::server::testing::ServerTest;
using ::testing::HasSubstr;

std::vector<double> RandomValues(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = uniform(rng);
  return values;
}

bool FileExists(const std::string& key) { return access(("/dev/shm" + key).c_str(), F_OK) == 0; }

bool SameBytes(const v1::Matrix& a, const v1::Matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && a.dtype() == b.dtype() &&
         a.data() == b.data();
}

class SharedMemoryRegionTest : public ServerTest {
 protected:
  // The names the server lists.
  static std::vector<std::string> Listed() {
    absl::StatusOr<v1::ListSharedMemoryResponse> listed = client().ListSharedMemory();
    EXPECT_TRUE(listed.ok()) << listed.status();
    std::vector<std::string> names;
    if (listed.ok()) {
      for (const v1::SharedMemoryRegion& region : listed->regions()) names.push_back(region.name());
    }
    return names;
  }

  static SharedMemoryRegion MakeRegion(const std::string& name, uint64_t bytes) {
    absl::StatusOr<SharedMemoryRegion> region = SharedMemoryRegion::Create(&client(), name, bytes);
    EXPECT_TRUE(region.ok()) << region.status();
    return region.ok() ? *std::move(region) : SharedMemoryRegion();
  }
};

TEST_F(SharedMemoryRegionTest, CreateRegistersAndDestructionRemovesEverywhere) {
  std::string key;
  {
    SharedMemoryRegion region = MakeRegion("lifetime", 1 << 16);
    key = region.key();
    EXPECT_TRUE(region.registered());
    EXPECT_EQ(region.size(), 1u << 16);
    EXPECT_TRUE(FileExists(key)) << key;
    absl::StatusOr<v1::ListSharedMemoryResponse> listed = client().ListSharedMemory();
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->regions_size(), 1);
    EXPECT_EQ(listed->regions(0).name(), "lifetime");
    EXPECT_EQ(listed->regions(0).key(), key);
    EXPECT_EQ(listed->regions(0).byte_size(), 1u << 16);
  }
  EXPECT_THAT(Listed(), ::testing::IsEmpty());
  EXPECT_FALSE(FileExists(key)) << key;
}

TEST_F(SharedMemoryRegionTest, ExplicitRegistrationAndUnregistration) {
  absl::StatusOr<SharedMemoryRegion> region =
      SharedMemoryRegion::Create(&client(), "later", 4096, {.register_now = false});
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_FALSE(region->registered());
  EXPECT_THAT(Listed(), ::testing::IsEmpty());
  ASSERT_TRUE(region->Register().ok());
  EXPECT_THAT(Listed(), ::testing::ElementsAre("later"));
  EXPECT_EQ(region->Register().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(region->Unregister().ok());
  EXPECT_THAT(Listed(), ::testing::IsEmpty());
  // Still mapped: views work, and it can be registered again.
  EXPECT_TRUE(region->View(0, 2, 2, v1::DTYPE_FLOAT64).ok());
  EXPECT_TRUE(region->Register().ok());
}

TEST_F(SharedMemoryRegionTest, NameInUseIsAlreadyExistsAndLeavesNoObjectBehind) {
  SharedMemoryRegion first = MakeRegion("taken", 4096);
  const std::string key = "/matrixd_taken_second_" + std::to_string(getpid());
  absl::StatusOr<SharedMemoryRegion> second =
      SharedMemoryRegion::Create(&client(), "taken", 4096, {.key = key});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists) << second.status();
  EXPECT_FALSE(FileExists(key));
  EXPECT_THAT(Listed(), ::testing::ElementsAre("taken"));
}

TEST_F(SharedMemoryRegionTest, AnExistingKeyIsAlreadyExists) {
  SharedMemoryRegion first = MakeRegion("one", 4096);
  absl::StatusOr<SharedMemoryRegion> second =
      SharedMemoryRegion::Create(&client(), "two", 4096, {.key = first.key()});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr(first.key()));
  EXPECT_TRUE(FileExists(first.key()));  // the first region's object is untouched
}

TEST_F(SharedMemoryRegionTest, MovedRegionKeepsOwnershipOnce) {
  SharedMemoryRegion moved;
  std::string key;
  {
    SharedMemoryRegion region = MakeRegion("moving", 4096);
    key = region.key();
    moved = std::move(region);
  }  // the moved-from object dies: nothing happens
  EXPECT_THAT(Listed(), ::testing::ElementsAre("moving"));
  EXPECT_TRUE(FileExists(key));
  EXPECT_EQ(moved.key(), key);
  moved = SharedMemoryRegion();  // assigning over it releases it
  EXPECT_THAT(Listed(), ::testing::IsEmpty());
  EXPECT_FALSE(FileExists(key));
}

TEST_F(SharedMemoryRegionTest, ViewsAreCheckedAndAllocationsPacked) {
  SharedMemoryRegion region = MakeRegion("views", 1024);
  EXPECT_EQ(region.View(4, 1, 1, v1::DTYPE_FLOAT64).status().code(),
            absl::StatusCode::kInvalidArgument);  // misaligned
  absl::Status past = region.View(1024 - 64, 3, 3, v1::DTYPE_FLOAT64).status();
  EXPECT_EQ(past.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(past.message(), HasSubstr("leaves shared-memory region views"));
  EXPECT_EQ(region.View(0, 0, 3, v1::DTYPE_FLOAT64).status().code(),
            absl::StatusCode::kInvalidArgument);

  absl::StatusOr<SharedMatrixView> a = region.Allocate(3, 3, v1::DTYPE_FLOAT64);  // 72 -> 256
  absl::StatusOr<SharedMatrixView> b = region.Allocate(2, 2, v1::DTYPE_FLOAT32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(b->offset, SharedMemoryRegion::kAlignment);
  EXPECT_EQ(b->ref().shared_memory().region(), "views");
  EXPECT_EQ(region.Allocate(100, 100, v1::DTYPE_FLOAT64).status().code(),
            absl::StatusCode::kResourceExhausted);

  const std::vector<double> values = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  ASSERT_TRUE(a->CopyFrom(MakeMatrix<double>(3, 3, values)).ok());
  EXPECT_EQ(std::vector<double>(a->values<double>().begin(), a->values<double>().end()), values);
  EXPECT_EQ(a->CopyFrom(MakeMatrix<double>(1, 9, values)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SharedMemoryRegionTest, DeterminantAndPermanentFromSharedMemoryEqualInline) {
  SharedMemoryRegion region = MakeRegion("det", 1 << 16);
  const v1::Matrix a = MakeMatrix<double>(48, 48, RandomValues(48 * 48, 1));
  absl::StatusOr<SharedMatrixView> view = region.Put(a);
  ASSERT_TRUE(view.ok()) << view.status();

  absl::StatusOr<v1::DeterminantResponse> inline_det = client().Determinant(a);
  absl::StatusOr<v1::DeterminantResponse> shm_det = client().Determinant(*view);
  ASSERT_TRUE(inline_det.ok()) << inline_det.status();
  ASSERT_TRUE(shm_det.ok()) << shm_det.status();
  EXPECT_EQ(shm_det->value(), inline_det->value());
  EXPECT_EQ(shm_det->log_abs(), inline_det->log_abs());
  EXPECT_EQ(shm_det->mantissa(), inline_det->mantissa());
  EXPECT_EQ(shm_det->exponent10(), inline_det->exponent10());

  const v1::Matrix small = MakeMatrix<double>(8, 8, RandomValues(64, 2));
  absl::StatusOr<SharedMatrixView> small_view = region.Put(small);
  ASSERT_TRUE(small_view.ok());
  absl::StatusOr<v1::PermanentResponse> inline_per = client().Permanent(small);
  absl::StatusOr<v1::PermanentResponse> shm_per = client().Permanent(*small_view);
  ASSERT_TRUE(inline_per.ok() && shm_per.ok()) << shm_per.status();
  EXPECT_EQ(shm_per->value(), inline_per->value());
}

TEST_F(SharedMemoryRegionTest, ProductWrittenIntoSharedMemoryEqualsInline) {
  SharedMemoryRegion region = MakeRegion("gemm", 1 << 16);
  const v1::Matrix a = MakeMatrix<double>(20, 30, RandomValues(600, 3));
  const v1::Matrix b = MakeMatrix<double>(30, 10, RandomValues(300, 4));
  absl::StatusOr<SharedMatrixView> a_view = region.Put(a);
  absl::StatusOr<SharedMatrixView> b_view = region.Put(b);
  absl::StatusOr<SharedMatrixView> c_view = region.Allocate(20, 10, v1::DTYPE_FLOAT64);
  ASSERT_TRUE(a_view.ok() && b_view.ok() && c_view.ok());

  absl::StatusOr<v1::MultiplyResponse> inline_product = client().Multiply(a, b);
  ASSERT_TRUE(inline_product.ok()) << inline_product.status();
  v1::MultiplyRequest request;
  WriteResultInto(*request.mutable_result_options(), "c", *c_view);
  absl::StatusOr<v1::MultiplyResponse> shm_product = client().Multiply(*a_view, *b_view, request);
  ASSERT_TRUE(shm_product.ok()) << shm_product.status();
  EXPECT_FALSE(shm_product->has_c());  // it went into the region
  EXPECT_TRUE(SameBytes(c_view->ToMatrix(), inline_product->c()));

  // ReadResultsBack puts it where an inline answer would be.
  ASSERT_TRUE(ReadResultsBack(region, request.result_options(), *shm_product).ok());
  EXPECT_TRUE(SameBytes(shm_product->c(), inline_product->c()));

  // A mixed call: one operand inline, one in shared memory.
  absl::StatusOr<v1::MultiplyResponse> mixed = client().Multiply(a, *b_view);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_TRUE(SameBytes(mixed->c(), inline_product->c()));
}

TEST_F(SharedMemoryRegionTest, FactorizationAndSolvesThroughSharedMemoryEqualInline) {
  SharedMemoryRegion region = MakeRegion("lu", 1 << 18);
  const int64_t n = 40;
  const v1::Matrix a = MakeMatrix<double>(n, n, RandomValues(n * n, 5));
  const v1::Matrix b = MakeMatrix<double>(n, 3, RandomValues(n * 3, 6));
  absl::StatusOr<SharedMatrixView> a_view = region.Put(a);
  absl::StatusOr<SharedMatrixView> b_view = region.Put(b);
  absl::StatusOr<SharedMatrixView> lu_view = region.Allocate(n, n, v1::DTYPE_FLOAT64);
  absl::StatusOr<SharedMatrixView> x_view = region.Allocate(n, 3, v1::DTYPE_FLOAT64);
  ASSERT_TRUE(a_view.ok() && b_view.ok() && lu_view.ok() && x_view.ok());

  v1::FactorizeRequest inline_request;
  inline_request.set_kind(v1::FACTORIZATION_KIND_LU);
  *inline_request.mutable_rhs() = b;
  absl::StatusOr<v1::FactorizeResponse> inline_lu = client().Factorize(a, inline_request);
  ASSERT_TRUE(inline_lu.ok()) << inline_lu.status();

  v1::FactorizeRequest shm_request;
  shm_request.set_kind(v1::FACTORIZATION_KIND_LU);
  *shm_request.mutable_rhs_ref() = b_view->ref();
  WriteResultInto(*shm_request.mutable_result_options(), "lu", *lu_view);
  WriteResultInto(*shm_request.mutable_result_options(), "solution", *x_view);
  absl::StatusOr<v1::FactorizeResponse> shm_lu = client().Factorize(*a_view, shm_request);
  ASSERT_TRUE(shm_lu.ok()) << shm_lu.status();
  EXPECT_TRUE(SameBytes(lu_view->ToMatrix(), inline_lu->lu()));
  EXPECT_TRUE(SameBytes(x_view->ToMatrix(), inline_lu->solution()));
  EXPECT_THAT(shm_lu->permutation(), ::testing::ElementsAreArray(inline_lu->permutation()));

  // A kept factorization solved for a right-hand side in shared memory, X written there.
  v1::FactorizeRequest keep;
  keep.set_kind(v1::FACTORIZATION_KIND_LU);
  keep.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::FactorizeResponse> kept = client().Factorize(*a_view, keep);
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::map<std::string, RemoteMatrix> owned = client().Adopt(kept->kept());
  const RemoteMatrix& factorization = owned.at("factorization");
  absl::StatusOr<v1::SolveResponse> inline_x = client().Solve(factorization, b);
  ASSERT_TRUE(inline_x.ok()) << inline_x.status();
  absl::StatusOr<SharedMatrixView> x2_view = region.Allocate(n, 3, v1::DTYPE_FLOAT64);
  ASSERT_TRUE(x2_view.ok());
  v1::SolveRequest solve;
  WriteResultInto(*solve.mutable_result_options(), "solution", *x2_view);
  absl::StatusOr<v1::SolveResponse> shm_x = client().Solve(factorization, *b_view, solve);
  ASSERT_TRUE(shm_x.ok()) << shm_x.status();
  EXPECT_TRUE(SameBytes(x2_view->ToMatrix(), inline_x->solution()));
}

TEST_F(SharedMemoryRegionTest, ReferenceToARemovedRegionIsNotFound) {
  absl::StatusOr<SharedMatrixView> view;
  v1::Matrix a = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0});
  {
    SharedMemoryRegion region = MakeRegion("gone", 4096);
    view = region.Put(a);
    ASSERT_TRUE(view.ok());
  }
  SharedMatrixView stale = *view;
  stale.bytes = {};  // unmapped with its region; the reference alone is sent
  absl::StatusOr<v1::DeterminantResponse> det = client().Determinant(stale);
  EXPECT_EQ(det.status().code(), absl::StatusCode::kNotFound) << det.status();
  EXPECT_THAT(det.status().message(), HasSubstr("gone"));
  ExpectStillServing();
}

}  // namespace
}  // namespace matrixd
