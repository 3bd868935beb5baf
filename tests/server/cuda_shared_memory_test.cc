// CUDA shared memory (RegisterCudaSharedMemory) without a GPU. On the CPU backend the RPC answers
// UNIMPLEMENTED after the checks every backend shares (handle size, name, one namespace with
// system regions). Then a backend that "opens" handles onto host memory stands in for the CUDA one,
// so that the server's part runs for real: CUDA regions listed with their kind, operands read and
// results written through the region's matrices, bad references and registrations answered.
// The real thing (two processes, one GPU) is tests/gpu/ipc-run.sh.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/shared_memory_commands.h"
#include "core/backend_wrapper.h"
#include "core/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matrixd/v1/matrixd.grpc.pb.h"
#include "tests/server/random_values.h"
#include "tests/server/shared_memory_rpcs.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

v1::SharedMemoryRef Ref(const std::string& region, uint64_t offset, int64_t rows, int64_t cols) {
  v1::SharedMemoryRef ref;
  ref.set_region(region);
  ref.set_offset(offset);
  ref.set_rows(rows);
  ref.set_cols(cols);
  ref.set_dtype(v1::DTYPE_FLOAT64);
  return ref;
}

const std::string kHandle(64, '\x5a');  // the right size; no driver will take it

// A POSIX shared-memory object of one page, for a system region; unlinked when destroyed.
class SystemObject {
 public:
  SystemObject() : key_("/matrixd_cuda_test_" + std::to_string(getpid())) {
    const int fd = shm_open(key_.c_str(), O_CREAT | O_RDWR, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, 4096), 0);
    close(fd);
  }
  ~SystemObject() { shm_unlink(key_.c_str()); }
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

class CudaSharedMemoryOnCpuTest : public ServerTest {
 protected:
  void TearDown() override {
    SharedMemoryRpcs rpcs(server().address());
    static_cast<void>(rpcs.UnregisterSystem(""));
  }
};

TEST_F(CudaSharedMemoryOnCpuTest, CpuBackendAnswersUnimplemented) {
  SharedMemoryRpcs rpcs(server().address());
  const grpc::Status status = rpcs.RegisterCuda("gpu", kHandle, 0, 1024);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(status.error_message(), HasSubstr("--backend=cuda"));
  EXPECT_EQ(rpcs.List().regions_size(), 0);
  ExpectStillServing();
}

TEST_F(CudaSharedMemoryOnCpuTest, BadRegistrationsNameTheField) {
  SharedMemoryRpcs rpcs(server().address());
  grpc::Status status = rpcs.RegisterCuda("gpu", std::string(10, 'x'), 0, 1024);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("raw_handle has 10 bytes; want the 64 bytes"));
  status = rpcs.RegisterCuda("", kHandle, 0, 1024);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("name is empty"));
  status = rpcs.RegisterCuda("gpu", kHandle, 0, 0);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("byte_size is 0"));
  ExpectStillServing();
}

TEST_F(CudaSharedMemoryOnCpuTest, OneNamespaceWithSystemRegions) {
  SharedMemoryRpcs rpcs(server().address());
  SystemObject object;
  ASSERT_TRUE(rpcs.RegisterSystem("taken", object.key(), 4096).ok());
  grpc::Status status = rpcs.RegisterCuda("taken", kHandle, 0, 1024);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(status.error_message(), HasSubstr("\"taken\" is registered already (a system"));
  status = rpcs.UnregisterCuda("taken");  // a system region is not the CUDA RPC's to drop
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("it is a system region"));
  EXPECT_EQ(rpcs.UnregisterCuda("never").error_code(), grpc::StatusCode::NOT_FOUND);
  const v1::ListSharedMemoryResponse listed = rpcs.List();
  ASSERT_EQ(listed.regions_size(), 1);
  EXPECT_EQ(listed.regions(0).kind(), v1::SHARED_MEMORY_KIND_SYSTEM);
  EXPECT_TRUE(rpcs.UnregisterSystem("taken").ok());
}

// Device memory as the server's part sees it, played by host memory: a ResidentMatrix over a
// range of `bytes`, never owning it.
class HostRangeMatrix final : public ResidentMatrix {
 public:
  HostRangeMatrix(std::byte* data, int64_t rows, int64_t cols, DType dtype)
      : ResidentMatrix(rows, cols, dtype), data_(data) {}
  int device_index() const override { return -1; }
  std::string device() const override { return "host stand-in"; }
  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, bytes.size()));
    std::memcpy(data_ + offset, bytes.data(), bytes.size());
    return absl::OkStatus();
  }
  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, out.size()));
    std::memcpy(out.data(), data_ + offset, out.size());
    return absl::OkStatus();
  }
  MatrixView view() const override { return {rows(), cols(), dtype(), data_}; }

 private:
  std::byte* data_;
};

class HostIpcMemory final : public IpcMemory {
 public:
  HostIpcMemory(std::byte* data, uint64_t bytes) : data_(data), bytes_(bytes) {}
  int device_index() const override { return 0; }
  std::string device() const override { return "host stand-in"; }
  uint64_t byte_size() const override { return bytes_; }
  std::unique_ptr<ResidentMatrix> MatrixAt(uint64_t offset, int64_t rows, int64_t cols,
                                           DType dtype) override {
    return std::make_unique<HostRangeMatrix>(data_ + offset, rows, cols, dtype);
  }

 private:
  std::byte* data_;
  uint64_t bytes_;
};

// The CPU backend, with handles "opened" onto one host buffer: device 0 only, as a one-GPU server.
class HostIpcBackend final : public BackendWrapper {
 public:
  explicit HostIpcBackend(std::vector<std::byte>* memory)
      : BackendWrapper(MakeCpuBackend({.threads = 1})), memory_(memory) {}
  absl::StatusOr<std::unique_ptr<IpcMemory>> OpenCudaIpc(std::span<const std::byte> /*raw_handle*/,
                                                         int device_id,
                                                         uint64_t byte_size) override {
    if (device_id != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device_id ", device_id, ": this server uses device 0 only"));
    }
    if (byte_size > memory_->size()) {
      return absl::InvalidArgumentError("byte_size is larger than the shared allocation");
    }
    return std::make_unique<HostIpcMemory>(memory_->data(), byte_size);
  }

 private:
  std::vector<std::byte>* memory_;
};

class CudaSharedMemoryServerTest : public ::testing::Test {
 protected:
  static constexpr int64_t kN = 24;
  static constexpr uint64_t kBytes = kN * kN * sizeof(double);

  CudaSharedMemoryServerTest()
      : memory_(3 * kBytes),
        server_(StartTestServer(std::make_unique<HostIpcBackend>(&memory_))),
        client_(server_->address(), {.deadline = absl::Seconds(20)}),
        rpcs_(server_->address()) {}

  std::vector<std::byte> memory_;  // the "device allocation": A, B, C
  std::unique_ptr<MatrixServer> server_;
  Client client_;
  SharedMemoryRpcs rpcs_;
};

TEST_F(CudaSharedMemoryServerTest, OperandsAndResultsInACudaRegionMatchTheInlinePath) {
  const std::vector<double> a = RandomValues(kN * kN, 1);
  const std::vector<double> b = RandomValues(kN * kN, 2);
  std::memcpy(memory_.data(), a.data(), kBytes);
  std::memcpy(memory_.data() + kBytes, b.data(), kBytes);
  absl::StatusOr<v1::SharedMemoryRegion> region = client_.RegisterCudaSharedMemory(
      "gpu", std::as_bytes(std::span<const char>(kHandle)), 0, 3 * kBytes);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(region->kind(), v1::SHARED_MEMORY_KIND_CUDA);
  const v1::ListSharedMemoryResponse listed = rpcs_.List();
  ASSERT_EQ(listed.regions_size(), 1);
  EXPECT_EQ(listed.regions(0).kind(), v1::SHARED_MEMORY_KIND_CUDA);
  EXPECT_EQ(listed.regions(0).device_id(), 0);
  EXPECT_EQ(listed.regions(0).byte_size(), 3 * kBytes);

  v1::MultiplyRequest multiply;
  *multiply.mutable_a_ref()->mutable_shared_memory() = Ref("gpu", 0, kN, kN);
  *multiply.mutable_b_ref()->mutable_shared_memory() = Ref("gpu", kBytes, kN, kN);
  (*multiply.mutable_result_options()->mutable_shared_memory_outputs())["c"] =
      Ref("gpu", 2 * kBytes, kN, kN);
  absl::StatusOr<v1::MultiplyResponse> written = client_.Multiply(multiply);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_FALSE(written->has_c());
  v1::MultiplyRequest inline_multiply;
  *inline_multiply.mutable_a() = MakeMatrix<double>(kN, kN, a);
  *inline_multiply.mutable_b() = MakeMatrix<double>(kN, kN, b);
  absl::StatusOr<v1::MultiplyResponse> inline_c = client_.Multiply(inline_multiply);
  ASSERT_TRUE(inline_c.ok());
  EXPECT_EQ(std::memcmp(memory_.data() + 2 * kBytes, inline_c->c().data().data(), kBytes), 0);
}

TEST_F(CudaSharedMemoryServerTest, BadReferencesAndRegistrationsNameTheProblem) {
  const auto handle = std::as_bytes(std::span<const char>(kHandle));
  absl::StatusOr<v1::SharedMemoryRegion> region =
      client_.RegisterCudaSharedMemory("gpu", handle, 3, kBytes);
  EXPECT_EQ(region.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(region.status().message(), HasSubstr("device_id 3"));
  region = client_.RegisterCudaSharedMemory("gpu", handle, 0, 2 * kBytes);
  ASSERT_TRUE(region.ok()) << region.status();
  region = client_.RegisterCudaSharedMemory("gpu", handle, 0, kBytes);
  EXPECT_EQ(region.status().code(), absl::StatusCode::kAlreadyExists);

  v1::MultiplyRequest multiply;
  *multiply.mutable_a_ref()->mutable_shared_memory() = Ref("gpu", kBytes + 8, kN, kN);
  *multiply.mutable_b_ref()->mutable_shared_memory() = Ref("gpu", 0, kN, kN);
  absl::StatusOr<v1::MultiplyResponse> product = client_.Multiply(multiply);
  EXPECT_EQ(product.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(product.status().message(),
              HasSubstr("a_ref.shared_memory: 24x24 float64 at offset 4616 runs past the end of "
                        "region \"gpu\""));

  // C goes into a target of the wrong shape: refused, and the region is untouched.
  *multiply.mutable_a_ref()->mutable_shared_memory() = Ref("gpu", 0, kN, kN);
  (*multiply.mutable_result_options()->mutable_shared_memory_outputs())["c"] =
      Ref("gpu", kBytes, kN / 2, kN);
  const std::vector<std::byte> before = memory_;
  product = client_.Multiply(multiply);
  EXPECT_EQ(product.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(product.status().message(), HasSubstr("is 12x24 float64; the result is 24x24"));
  EXPECT_EQ(memory_, before);

  // The system RPC does not drop a CUDA region; the CUDA one does, and then it is gone.
  EXPECT_EQ(rpcs_.UnregisterSystem("gpu").error_code(), grpc::StatusCode::NOT_FOUND);
  absl::StatusOr<int> dropped = client_.UnregisterCudaSharedMemory("gpu");
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(*dropped, 1);
  multiply.mutable_result_options()->clear_shared_memory_outputs();
  product = client_.Multiply(multiply);
  EXPECT_EQ(product.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(product.status().message(), HasSubstr("a_ref.shared_memory.region \"gpu\""));
  EXPECT_EQ(client_.UnregisterCudaSharedMemory("gpu").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CudaSharedMemoryServerTest, MatrixctlShmListShowsKindAndDevice) {
  const auto handle = std::as_bytes(std::span<const char>(kHandle));
  ASSERT_TRUE(client_.RegisterCudaSharedMemory("gpu", handle, 0, kBytes).ok());
  std::ostringstream out;
  ASSERT_TRUE(RunSharedMemoryList(client_, out).ok());
  EXPECT_THAT(out.str(), ::testing::StartsWith("gpu "));
  EXPECT_THAT(out.str(), HasSubstr(" cuda "));
  EXPECT_THAT(out.str(), HasSubstr("device 0"));
  EXPECT_THAT(out.str(), HasSubstr("\n1 shared-memory region(s)"));
}

}  // namespace
}  // namespace matrixd::server::testing
