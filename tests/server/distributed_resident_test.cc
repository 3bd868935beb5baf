// Distributed resident matrices (layout DISTRIBUTED) without a GPU: the registry charges each
// device's admission its part and gives it back, refuses the layout with fewer than 2 devices
// naming `layout`, and an operand taken from one is gathered to the host or left in place; the
// RPCs of a CPU server refuse the layout; a product over several (fake) devices through gRPC reads
// the parts in place, and one kept is kept distributed. (The CPU backend's host matrices stand in
// for the parts; the GPU run is tests/multi_gpu/distributed_resident_test.cc.)
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "client/client.h"
#include "core/cpu/cpu_backend.h"
#include "core/distributed_resident_matrix.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/matrix_conversion.h"
#include "server/memory_admission.h"
#include "server/resident_registry.h"
#include "tests/server/fake_device_backend.h"
#include "tests/server/test_server.h"

namespace matrixd::server {
namespace {

using ::testing::HasSubstr;

// 1100 x 3 float64: blocks of 512 rows, so device 0 holds blocks 0 and 2 (588 rows), device 1
// block 1 (512 rows).
constexpr int64_t kRows = 1100;
constexpr int64_t kCols = 3;
constexpr uint64_t kPart0Bytes = 588 * kCols * 8;
constexpr uint64_t kPart1Bytes = 512 * kCols * 8;

std::vector<double> Ramp() {
  std::vector<double> values(static_cast<size_t>(kRows * kCols));
  std::iota(values.begin(), values.end(), 1.0);
  return values;
}

class DistributedRegistryTest : public ::testing::Test {
 protected:
  std::string MakeRamp() {
    auto pending = registry_.Create(kRows, kCols, DType::kFloat64, "ramp", -1, {},
                                    ResidentLayout::kDistributed);
    EXPECT_TRUE(pending.ok()) << pending.status();
    if (!pending.ok()) return "";
    const std::vector<double> values = Ramp();
    const auto bytes = std::as_bytes(std::span<const double>(values));
    // Odd pieces, as an upload's chunks may come.
    for (size_t at = 0; at < bytes.size(); at += 5000) {
      EXPECT_TRUE((*pending)
                      ->matrix()
                      .Write(at, bytes.subspan(at, std::min<size_t>(5000, bytes.size() - at)))
                      .ok());
    }
    auto info = registry_.Commit(*std::move(pending), true);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->handle : "";
  }

  std::unique_ptr<Backend> backend_ = MakeCpuBackend({.threads = 1});
  MemoryAdmission device0_{1 << 20};
  MemoryAdmission device1_{1 << 20};
  ResidentRegistry registry_{*backend_, {&device0_, &device1_}, {.limit_bytes = 1 << 22}};
};

TEST_F(DistributedRegistryTest, EachDeviceIsChargedItsPartUntilRelease) {
  const std::string handle = MakeRamp();
  ASSERT_FALSE(handle.empty());
  EXPECT_EQ(device0_.reserved(), kPart0Bytes);
  EXPECT_EQ(device1_.reserved(), kPart1Bytes);
  const std::vector<ResidentInfo> listed = registry_.List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].layout, ResidentLayout::kDistributed);
  EXPECT_EQ(listed[0].bytes, kPart0Bytes + kPart1Bytes);
  EXPECT_THAT(listed[0].device, HasSubstr("distributed over 2 devices in blocks of 512 rows"));
  ASSERT_TRUE(registry_.Release(handle).ok());
  EXPECT_EQ(device0_.reserved(), 0u);
  EXPECT_EQ(device1_.reserved(), 0u);
  EXPECT_EQ(registry_.resident_bytes(), 0u);
}

TEST_F(DistributedRegistryTest, ReadsBackWhatWasWritten) {
  const std::string handle = MakeRamp();
  auto lease = registry_.Acquire(handle, "matrix_ref");
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_NE(lease->distributed(), nullptr);
  std::vector<double> back(static_cast<size_t>(kRows * kCols));
  ASSERT_TRUE(lease->Read(0, std::as_writable_bytes(std::span<double>(back))).ok());
  EXPECT_EQ(back, Ramp());
}

TEST_F(DistributedRegistryTest, APartThatDoesNotFitNamesItsDeviceAndGivesTheOthersBack) {
  ASSERT_TRUE(device1_.TryReserve((1 << 20) - 100));
  auto pending =
      registry_.Create(kRows, kCols, DType::kFloat64, "", -1, {}, ResidentLayout::kDistributed);
  EXPECT_EQ(pending.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(pending.status().message(), HasSubstr("device 1"));
  EXPECT_EQ(device0_.reserved(), 0u);
  EXPECT_EQ(registry_.resident_bytes(), 0u);
  device1_.Unreserve((1 << 20) - 100);
}

TEST_F(DistributedRegistryTest, AnOperandIsGatheredToTheHostOrLeftInPlace) {
  const std::string handle = MakeRamp();
  v1::MatrixRef reference;
  reference.set_handle(handle);
  absl::StatusOr<InputMatrix> gathered = FromProto(reference, &registry_, "matrix_ref");
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  EXPECT_FALSE(gathered->view().on_device());
  EXPECT_EQ(gathered->distributed(), nullptr);
  ASSERT_NE(gathered->view().data, nullptr);
  std::vector<double> values(static_cast<size_t>(kRows * kCols));
  std::memcpy(values.data(), gathered->view().data, gathered->view().byte_size());
  EXPECT_EQ(values, Ramp());

  absl::StatusOr<InputMatrix> in_place =
      FromProto(reference, &registry_, "matrix_ref", nullptr, {}, DistributedUse::kInPlace);
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  ASSERT_NE(in_place->distributed(), nullptr);
  EXPECT_EQ(in_place->view().data, nullptr);
  EXPECT_EQ(in_place->view().rows, kRows);
  ASSERT_TRUE(in_place->CopyToHost().ok());  // a backend that reads on the host gathers it
  std::memcpy(values.data(), in_place->view().data, in_place->view().byte_size());
  EXPECT_EQ(values, Ramp());
}

TEST(DistributedRegistry, FewerThanTwoDevicesIsInvalidArgumentNamingLayout) {
  std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = 1});
  MemoryAdmission device0{1 << 20};
  ResidentRegistry one_gpu{*backend, {&device0}, {}};
  ResidentRegistry host{*backend, {}, {}};
  for (ResidentRegistry* registry : {&one_gpu, &host}) {
    auto pending =
        registry->Create(4, 4, DType::kFloat64, "", -1, {}, ResidentLayout::kDistributed);
    EXPECT_EQ(pending.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(pending.status().message(), HasSubstr("layout"));
    EXPECT_EQ(registry->resident_bytes(), 0u);
  }
  EXPECT_EQ(device0.reserved(), 0u);
}

// The RPCs of a CPU server (no GPU: the layout is refused, nothing is kept).
class DistributedRpcTest : public testing::ServerTest {};

TEST_F(DistributedRpcTest, GenerateCreateAndUploadRefuseTheLayoutNamingIt) {
  v1::GenerateRequest generate;
  generate.set_rows(8);
  generate.set_cols(8);
  generate.set_dtype(v1::DTYPE_FLOAT64);
  generate.set_generator(v1::GENERATOR_RANDOM);
  generate.set_layout(v1::RESIDENT_LAYOUT_DISTRIBUTED);
  absl::StatusOr<v1::ResidentMatrix> made = client().Generate(generate);
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(made.status().message(), HasSubstr("layout"));

  const std::vector<double> values(64, 1.0);
  const HostMatrixView matrix{.rows = 8,
                              .cols = 8,
                              .dtype = v1::DTYPE_FLOAT64,
                              .bytes = std::as_bytes(std::span<const double>(values))};
  for (const int streams : {1, 2}) {
    UploadOptions options;
    options.layout = v1::RESIDENT_LAYOUT_DISTRIBUTED;
    options.parallel_streams = streams;
    options.parallel_min_bytes = 0;  // 2 streams: CreateMatrix, then the parts
    absl::StatusOr<RemoteMatrix> uploaded = client().Upload(matrix, options);
    EXPECT_EQ(uploaded.status().code(), absl::StatusCode::kInvalidArgument) << streams;
    EXPECT_THAT(uploaded.status().message(), HasSubstr("layout"));
  }
  absl::StatusOr<v1::ListMatricesResponse> listed = client().ListMatrices();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->resident_bytes(), 0u);
  ExpectStillServing();
}

TEST_F(DistributedRpcTest, AnUnknownLayoutIsInvalidArgumentAndSingleIsReported) {
  v1::GenerateRequest generate;
  generate.set_rows(2);
  generate.set_cols(2);
  generate.set_dtype(v1::DTYPE_FLOAT64);
  generate.set_generator(v1::GENERATOR_IDENTITY);
  generate.set_layout(static_cast<v1::ResidentLayout>(7));
  absl::StatusOr<v1::ResidentMatrix> made = client().Generate(generate);
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(made.status().message(), HasSubstr("layout"));
  generate.set_layout(v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
  made = client().Generate(generate);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->layout(), v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
  EXPECT_TRUE(client().Release(made->handle()).ok());
}

// A product over 2 (fake) devices through gRPC takes distributed operands in place, from their
// parts; one over 1 device gathers them to the host first. Same C either way.
TEST(DistributedProductRpc, AProductOverSeveralDevicesReadsThePartsInPlace) {
  auto owned = std::make_unique<testing::FakeDeviceBackend>(2);
  testing::FakeDeviceBackend& backend = *owned;
  std::unique_ptr<MatrixServer> server = testing::StartTestServer(std::move(owned));
  ASSERT_NE(server, nullptr);
  Client client(server->address(), {.deadline = absl::Seconds(20)});
  std::vector<std::string> handles;
  for (const uint64_t seed : {1, 2}) {
    v1::GenerateRequest generate;
    generate.set_rows(5);  // 5 x 5: small enough for the fake devices' 1000 bytes
    generate.set_cols(5);
    generate.set_dtype(v1::DTYPE_FLOAT64);
    generate.set_generator(v1::GENERATOR_RANDOM);
    generate.set_seed(seed);
    generate.set_layout(v1::RESIDENT_LAYOUT_DISTRIBUTED);
    absl::StatusOr<v1::ResidentMatrix> made = client.Generate(generate);
    ASSERT_TRUE(made.ok()) << made.status();
    handles.push_back(made->handle());
  }
  std::vector<std::string> products;
  for (const int devices : {2, 1}) {
    v1::MultiplyRequest request;
    request.mutable_a_ref()->set_handle(handles[0]);
    request.mutable_b_ref()->set_handle(handles[1]);
    request.set_devices(devices);
    absl::StatusOr<v1::MultiplyResponse> response = client.Multiply(request);
    ASSERT_TRUE(response.ok()) << devices << " devices: " << response.status();
    EXPECT_EQ(response->c().rows(), 5);
    products.push_back(response->c().data());
    EXPECT_EQ(backend.distributed_operands(), 2) << devices << " devices";
  }
  EXPECT_EQ(products[0], products[1]);
}

// A kept product over several (fake) devices is kept as a distributed matrix over them (the
// backend returns C on the host here, so the server writes it into the parts), and downloads as
// the inline product; with also_inline it is kept on one device, as any result.
TEST(DistributedProductRpc, AKeptProductOverSeveralDevicesIsKeptDistributed) {
  std::unique_ptr<MatrixServer> server =
      testing::StartTestServer(std::make_unique<testing::FakeDeviceBackend>(2));
  ASSERT_NE(server, nullptr);
  Client client(server->address(), {.deadline = absl::Seconds(20)});
  v1::MultiplyRequest request;
  // 3 x 4 times 4 x 5: small enough for the fake devices' 1000 bytes.
  *request.mutable_a() = MakeMatrix<double>(3, 4, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  std::vector<double> b(20);
  std::iota(b.begin(), b.end(), -3.5);
  *request.mutable_b() = MakeMatrix<double>(4, 5, b);
  request.set_devices(2);
  absl::StatusOr<v1::MultiplyResponse> inline_product = client.Multiply(request);
  ASSERT_TRUE(inline_product.ok()) << inline_product.status();

  request.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::MultiplyResponse> kept = client.Multiply(request);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_FALSE(kept->has_c());
  ASSERT_TRUE(kept->kept().contains("c"));
  const v1::ResidentMatrix& c = kept->kept().at("c");
  EXPECT_EQ(c.layout(), v1::RESIDENT_LAYOUT_DISTRIBUTED);
  EXPECT_THAT(c.device(), HasSubstr("distributed over 2 devices"));
  absl::StatusOr<v1::Matrix> downloaded = client.Download(c.handle());
  ASSERT_TRUE(downloaded.ok()) << downloaded.status();
  EXPECT_EQ(downloaded->rows(), 3);
  EXPECT_EQ(downloaded->cols(), 5);
  EXPECT_EQ(downloaded->data(), inline_product->c().data());

  request.mutable_result_options()->set_also_inline(true);
  absl::StatusOr<v1::MultiplyResponse> both = client.Multiply(request);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->c().data(), inline_product->c().data());
  ASSERT_TRUE(both->kept().contains("c"));
  EXPECT_EQ(both->kept().at("c").layout(), v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
}

}  // namespace
}  // namespace matrixd::server
