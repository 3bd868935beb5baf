// A factorization kept on the GPUs that computed it (Factorize over several devices with
// keep_result: core/device_factorization.h) without a GPU: the fake devices' backend keeps it as a
// FakeKeptFactorization (tests/server/fake_device_backend.h). The registry charges each device its
// part at once, even past the limit (the job's memory it was made in), gives it back on Release,
// and frees it when the limit or quota refuses it; through gRPC it is kept distributed under one
// handle, solves as the factorization kept on one device does, downloads and multiplies as its
// factor, refuses a wrong right-hand side or a transpose naming the field, and after Release is
// NOT_FOUND. On one device, keep_result alone asks the backend to keep it there (the CPU backend
// cannot: it is kept as resident matrices as before), and one kept there with one part is a
// single-device matrix. The GPU runs: tests/server/distributed_factorization_test.cc,
// tests/server/one_gpu_kept_factorization_test.cc.
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "core/backend_wrapper.h"
#include "core/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/memory_admission.h"
#include "server/resident_registry.h"
#include "tests/server/fake_device_backend.h"
#include "tests/server/test_server.h"

namespace matrixd::server {
namespace {

using testing::FakeDeviceBackend;
using testing::FakeKeptFactorization;
using ::testing::HasSubstr;

// A 4 x 4 LU made by the CPU backend, kept "over" 2 fake devices: 64 bytes on each.
std::unique_ptr<FakeKeptFactorization> KeptLu(Backend& cpu) {
  const Matrix a = Matrix::FromValues<double>(
      4, 4, std::vector<double>{4, 1, 0, 0, 1, 5, 1, 0, 0, 1, 6, 1, 0, 0, 1, 7});
  absl::StatusOr<FactorizeResult> lu = cpu.Factorize(a.view(), {}, nullptr, nullptr);
  EXPECT_TRUE(lu.ok()) << lu.status();
  return std::make_unique<FakeKeptFactorization>(*std::move(lu), cpu, 2);
}

class KeptFactorizationRegistryTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 1});
  MemoryAdmission device0_{1000};
  MemoryAdmission device1_{1000};
  ResidentRegistry registry_{*cpu_, {&device0_, &device1_}, {.limit_bytes = 1 << 20}};
};

TEST_F(KeptFactorizationRegistryTest, EachDeviceIsChargedItsPartAtOnceUntilRelease) {
  // The job that made it holds most of device 0 still: the part is counted past the limit.
  ASSERT_TRUE(device0_.TryReserve(990));
  absl::StatusOr<ResidentInfo> info =
      registry_.KeepOnDevices(KeptLu(*cpu_), {.kind = FactorizationKind::kLu}, "lu");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(device0_.reserved(), 990u + 64u);
  EXPECT_EQ(device1_.reserved(), 64u);
  device0_.Unreserve(990);
  EXPECT_EQ(info->layout, ResidentLayout::kDistributed);
  EXPECT_EQ(info->bytes, 128u);
  EXPECT_EQ(info->rows, 4);
  ASSERT_TRUE(info->factorization.has_value());
  EXPECT_EQ(info->factorization->kind, FactorizationKind::kLu);
  EXPECT_EQ(registry_.resident_bytes(), 128u);
  {
    absl::StatusOr<ResidentLease> lease = registry_.Acquire(info->handle, "factorization");
    ASSERT_TRUE(lease.ok()) << lease.status();
    ASSERT_NE(lease->device_factorization(), nullptr);
    EXPECT_EQ(lease->device_factorization()->rows(), 4);
  }
  ASSERT_TRUE(registry_.Release(info->handle).ok());
  EXPECT_EQ(device0_.reserved(), 0u);
  EXPECT_EQ(device1_.reserved(), 0u);
  EXPECT_EQ(registry_.resident_bytes(), 0u);
}

TEST_F(KeptFactorizationRegistryTest, PastTheQuotaIsRefusedAndChargesNothing) {
  absl::StatusOr<ResidentInfo> info = registry_.KeepOnDevices(
      KeptLu(*cpu_), {.kind = FactorizationKind::kLu}, "lu", {.name = "ann", .max_bytes = 100});
  EXPECT_EQ(info.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(info.status().message(), HasSubstr("max_resident_bytes"));
  EXPECT_EQ(device0_.reserved(), 0u);
  EXPECT_EQ(device1_.reserved(), 0u);
  EXPECT_EQ(registry_.resident_bytes(), 0u);
  EXPECT_TRUE(registry_.List().empty());
}

// Kept on one device (one part), it is a single-device matrix charged on that device alone.
TEST_F(KeptFactorizationRegistryTest, OnOneDeviceItIsASingleDeviceMatrix) {
  const Matrix a = Matrix::FromValues<double>(2, 2, std::vector<double>{4, 1, 1, 5});
  absl::StatusOr<FactorizeResult> lu = cpu_->Factorize(a.view(), {}, nullptr, nullptr);
  ASSERT_TRUE(lu.ok()) << lu.status();
  absl::StatusOr<ResidentInfo> info =
      registry_.KeepOnDevices(std::make_unique<FakeKeptFactorization>(*std::move(lu), *cpu_, 1),
                              {.kind = FactorizationKind::kLu}, "lu");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->layout, ResidentLayout::kSingleDevice);
  EXPECT_EQ(device0_.reserved(), 16u);
  EXPECT_EQ(device1_.reserved(), 0u);
  ASSERT_TRUE(registry_.Release(info->handle).ok());
  EXPECT_EQ(device0_.reserved(), 0u);
}

// The CPU backend with the keep_on_devices each Factorize asked for recorded.
class KeepOnDevicesRecorder final : public BackendWrapper {
 public:
  KeepOnDevicesRecorder() : BackendWrapper(MakeCpuBackend({.threads = 1})) {}
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    asked = options.keep_on_devices ? 1 : 0;
    return BackendWrapper::Factorize(a, options, rhs, control);
  }
  std::atomic<int> asked{-1};  // the last Factorize's keep_on_devices; -1 before any
};

// keep_result on one device asks the backend to keep the factorization where it computed it,
// unless also_inline or keep_input (or no keep_result); a backend that cannot (the CPU backend)
// returns it, and it is kept as resident matrices and solves as before.
TEST(KeepOnDevicesOnOneDevice, AskedForKeepResultAloneAndHonouredOnlyWhereTheBackendCan) {
  auto owned = std::make_unique<KeepOnDevicesRecorder>();
  KeepOnDevicesRecorder* recorder = owned.get();
  std::unique_ptr<MatrixServer> server = testing::StartTestServer(std::move(owned));
  ASSERT_NE(server, nullptr);
  Client client(server->address(), {.deadline = absl::Seconds(20)});
  struct Case {
    bool keep_result, also_inline, keep_input, want_asked;
  };
  for (const Case& c : {Case{true, false, false, true}, Case{true, true, false, false},
                        Case{true, false, true, false}, Case{false, false, false, false}}) {
    SCOPED_TRACE(::testing::Message() << c.keep_result << c.also_inline << c.keep_input);
    v1::FactorizeRequest request;
    *request.mutable_matrix() = MakeMatrix<double>(2, 2, std::vector<double>{4, 1, 1, 5});
    request.set_kind(v1::FACTORIZATION_KIND_LU);
    request.mutable_result_options()->set_keep_result(c.keep_result);
    request.mutable_result_options()->set_also_inline(c.also_inline);
    request.set_keep_input(c.keep_input);
    recorder->asked = -1;
    absl::StatusOr<v1::FactorizeResponse> response = client.Factorize(request);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(recorder->asked.load(), c.want_asked ? 1 : 0);
    if (!c.keep_result) continue;
    const v1::ResidentMatrix& kept = response->kept().at("factorization");
    EXPECT_EQ(kept.layout(), v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
    v1::SolveRequest solve;
    solve.mutable_factorization()->set_handle(kept.handle());
    *solve.mutable_rhs() = MakeMatrix<double>(2, 1, std::vector<double>{5, 6});
    absl::StatusOr<v1::SolveResponse> solved = client.Solve(solve);
    ASSERT_TRUE(solved.ok()) << solved.status();
    // 4x + y = 5, x + 5y = 6: x = y = 1.
    const std::string& x = solved->solution().data();
    ASSERT_EQ(x.size(), 2 * sizeof(double));
    double values[2];
    std::memcpy(values, x.data(), sizeof(values));
    EXPECT_NEAR(values[0], 1.0, 1e-15);
    EXPECT_NEAR(values[1], 1.0, 1e-15);
    ASSERT_TRUE(client.Release(kept.handle()).ok());
  }
}

class KeptFactorizationRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto owned = std::make_unique<FakeDeviceBackend>(2);
    backend_ = owned.get();
    server_ = testing::StartTestServer(std::move(owned));
    ASSERT_NE(server_, nullptr);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(20)});
  }

  // A 4 x 4 symmetric positive definite matrix and two right-hand sides.
  v1::FactorizeRequest Request(v1::FactorizationKind kind) const {
    v1::FactorizeRequest request;
    *request.mutable_matrix() = MakeMatrix<double>(
        4, 4, std::vector<double>{4, 1, 0, 0, 1, 5, 1, 0, 0, 1, 6, 1, 0, 0, 1, 7});
    request.set_kind(kind);
    request.set_devices(2);
    return request;
  }

  // The handle of the LU of Request's matrix kept over the 2 fake devices.
  std::string KeepLu() {
    v1::FactorizeRequest request = Request(v1::FACTORIZATION_KIND_LU);
    request.mutable_result_options()->set_keep_result(true);
    absl::StatusOr<v1::FactorizeResponse> kept = client_->Factorize(request);
    EXPECT_TRUE(kept.ok()) << kept.status();
    return kept.ok() ? kept->kept().at("factorization").handle() : "";
  }

  FakeDeviceBackend* backend_ = nullptr;
  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
};

const v1::Matrix& Rhs() {
  static const v1::Matrix* rhs =
      new v1::Matrix(MakeMatrix<double>(4, 2, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
  return *rhs;
}

TEST_F(KeptFactorizationRpcTest, KeptOverTheDevicesSolvesAndDownloadsAsTheInlineOne) {
  for (const v1::FactorizationKind kind :
       {v1::FACTORIZATION_KIND_LU, v1::FACTORIZATION_KIND_CHOLESKY}) {
    SCOPED_TRACE(v1::FactorizationKind_Name(kind));
    const bool lu = kind == v1::FACTORIZATION_KIND_LU;
    // The reference: the factors inline and kept on one device (also_inline), and its solve.
    v1::FactorizeRequest request = Request(kind);
    request.mutable_result_options()->set_keep_result(true);
    request.mutable_result_options()->set_also_inline(true);
    absl::StatusOr<v1::FactorizeResponse> inline_factors = client_->Factorize(request);
    ASSERT_TRUE(inline_factors.ok()) << inline_factors.status();
    const std::string on_one = inline_factors->kept().at("factorization").handle();
    v1::SolveRequest reference;
    reference.mutable_factorization()->set_handle(on_one);
    *reference.mutable_rhs() = Rhs();
    absl::StatusOr<v1::SolveResponse> expected = client_->Solve(reference);
    ASSERT_TRUE(expected.ok()) << expected.status();

    request.mutable_result_options()->set_also_inline(false);
    const size_t kept_before = backend_->kept().size();
    absl::StatusOr<v1::FactorizeResponse> kept = client_->Factorize(request);
    ASSERT_TRUE(kept.ok()) << kept.status();
    ASSERT_EQ(backend_->kept().size(), kept_before + 1);
    EXPECT_FALSE(kept->has_lu());
    EXPECT_FALSE(kept->has_l());
    if (lu) {
      EXPECT_EQ(std::vector<int64_t>(kept->permutation().begin(), kept->permutation().end()),
                std::vector<int64_t>(inline_factors->permutation().begin(),
                                     inline_factors->permutation().end()));
    }
    ASSERT_TRUE(kept->kept().contains("factorization"));
    const v1::ResidentMatrix& handle = kept->kept().at("factorization");
    EXPECT_EQ(handle.layout(), v1::RESIDENT_LAYOUT_DISTRIBUTED);
    EXPECT_EQ(handle.factorization_kind(), kind);
    EXPECT_THAT(handle.device(), HasSubstr("kept over 2 fake devices"));
    EXPECT_EQ(kept->kept().at(lu ? "lu" : "l").handle(), handle.handle());

    v1::SolveRequest solve;
    solve.mutable_factorization()->set_handle(handle.handle());
    *solve.mutable_rhs() = Rhs();
    absl::StatusOr<v1::SolveResponse> solved = client_->Solve(solve);
    ASSERT_TRUE(solved.ok()) << solved.status();
    EXPECT_EQ(backend_->kept().back()->solves.load(), 1);
    EXPECT_EQ(solved->solution().data(), expected->solution().data());

    absl::StatusOr<v1::Matrix> factor = client_->Download(handle.handle());
    ASSERT_TRUE(factor.ok()) << factor.status();
    EXPECT_EQ(factor->data(), (lu ? inline_factors->lu() : inline_factors->l()).data());
    ASSERT_TRUE(client_->Release(handle.handle()).ok());
    ASSERT_TRUE(client_->Release(on_one).ok());
  }
}

// Used as a plain operand, the kept factor is gathered to the host: its product with I is itself.
TEST_F(KeptFactorizationRpcTest, AsAnOperandItIsTheFactor) {
  const std::string handle = KeepLu();
  ASSERT_FALSE(handle.empty());
  v1::MultiplyRequest multiply;
  multiply.mutable_a_ref()->set_handle(handle);
  std::vector<double> identity(16, 0.0);
  for (int i = 0; i < 4; ++i) identity[static_cast<size_t>(i * 5)] = 1.0;
  *multiply.mutable_b() = MakeMatrix<double>(4, 4, identity);
  absl::StatusOr<v1::MultiplyResponse> product = client_->Multiply(multiply);
  ASSERT_TRUE(product.ok()) << product.status();
  absl::StatusOr<v1::Matrix> factor = client_->Download(handle);
  ASSERT_TRUE(factor.ok()) << factor.status();
  EXPECT_EQ(product->c().data(), factor->data());
}

TEST_F(KeptFactorizationRpcTest, AWrongRightHandSideOrATransposeIsRefusedNamingTheField) {
  const std::string handle = KeepLu();
  ASSERT_FALSE(handle.empty());
  v1::SolveRequest solve;
  solve.mutable_factorization()->set_handle(handle);
  *solve.mutable_rhs() = MakeMatrix<float>(4, 1, std::vector<float>{1, 2, 3, 4});
  absl::StatusOr<v1::SolveResponse> wrong_dtype = client_->Solve(solve);
  EXPECT_EQ(wrong_dtype.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_dtype.status().message(), HasSubstr("rhs.dtype"));
  *solve.mutable_rhs() = MakeMatrix<double>(3, 1, std::vector<double>{1, 2, 3});
  absl::StatusOr<v1::SolveResponse> wrong_rows = client_->Solve(solve);
  EXPECT_EQ(wrong_rows.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_rows.status().message(), HasSubstr("rhs is 3x1"));
  *solve.mutable_rhs() = Rhs();
  solve.set_transpose(v1::SOLVE_TRANSPOSE_TRANSPOSE);
  absl::StatusOr<v1::SolveResponse> transposed = client_->Solve(solve);
  EXPECT_EQ(transposed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(transposed.status().message(), HasSubstr("transpose"));
  EXPECT_EQ(backend_->kept().back()->solves.load(), 0);

  ASSERT_TRUE(client_->Release(handle).ok());
  solve.set_transpose(v1::SOLVE_TRANSPOSE_NONE);
  absl::StatusOr<v1::SolveResponse> released = client_->Solve(solve);
  EXPECT_EQ(released.status().code(), absl::StatusCode::kNotFound);
}

// With also_inline, or keep_input, the factorization comes back to the host and is kept on one
// device as before.
TEST_F(KeptFactorizationRpcTest, AlsoInlineOrKeepInputKeepsItOnOneDevice) {
  for (const bool also_inline : {true, false}) {
    v1::FactorizeRequest request = Request(v1::FACTORIZATION_KIND_LU);
    request.mutable_result_options()->set_keep_result(true);
    request.mutable_result_options()->set_also_inline(also_inline);
    request.set_keep_input(!also_inline);
    const size_t kept_before = backend_->kept().size();
    absl::StatusOr<v1::FactorizeResponse> kept = client_->Factorize(request);
    ASSERT_TRUE(kept.ok()) << kept.status();
    EXPECT_EQ(backend_->kept().size(), kept_before);
    EXPECT_EQ(kept->kept().at("factorization").layout(), v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
  }
}

}  // namespace
}  // namespace matrixd::server
