// Resident matrices end to end through matrixd::Client and the real server on loopback (CPU
// backend): uploads and downloads round trip bit for bit, every bad upload stream is refused
// naming its problem and keeps nothing, handles die by Release and by TTL, results chain by
// handle, and two clients share a handle.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/matrix_values.h"
#include "core/cpu/cpu_backend.h"
#include "core/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matrixd/v1/matrixd.grpc.pb.h"
#include "server/server.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::unique_ptr<MatrixServer> StartResidentServer(absl::Duration ttl) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.max_message_bytes = 64 << 20;
  options.resident.ttl = ttl;
  options.resident.sweep_interval = std::min(ttl / 4, absl::Seconds(1));
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(MakeCpuBackend({.threads = 2}), options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// Random bytes that are finite values of every dtype (each 4-byte word a float in [-1, 1) works
// for FLOAT32/COMPLEX64/UINT32; the same pattern read as 8-byte words is finite too, since the
// high word's exponent is at most 0x3f8).
std::string RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::string bytes(size, '\0');
  for (size_t at = 0; at + 4 <= size; at += 4) {
    const float value = uniform(rng);
    std::memcpy(bytes.data() + at, &value, 4);
  }
  return bytes;
}

v1::Matrix RandomMatrix(int64_t rows, int64_t cols, v1::DType dtype, uint64_t seed) {
  v1::Matrix m;
  m.set_rows(rows);
  m.set_cols(cols);
  m.set_dtype(dtype);
  m.set_data(RandomBytes(static_cast<size_t>(rows * cols * ElementSize(dtype)), seed));
  return m;
}

v1::Matrix WellConditioned(int64_t n, uint64_t seed) {
  // Random in [-1, 1), plus n on the diagonal.
  std::vector<double> values(static_cast<size_t>(n * n));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (int64_t i = 0; i < n * n; ++i) values[i] = uniform(rng) + (i % (n + 1) == 0 ? n : 0);
  return MakeMatrix<double>(n, n, values);
}

class ResidentRpcTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartResidentServer(absl::Hours(1)).release();
    ASSERT_NE(server_, nullptr);
    client_ = new Client(server_->address(), {.deadline = absl::Seconds(30)});
  }
  static void TearDownTestSuite() {
    delete client_;
    client_ = nullptr;
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    stub_ = v1::MatrixService::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  // Whatever a test did, nothing stays resident afterwards.
  void TearDown() override { ExpectNothingResident(); }

  static Client& client() { return *client_; }
  static const std::string& server_address() { return server_->address(); }

  // The server frees a matrix's bytes when its last lease ends: a download's lease ends when
  // the server's side of the call is torn down, which may come a moment after the client has
  // seen the call finish. So the listing is polled for a while.
  static void ExpectNothingResident() {
    absl::StatusOr<v1::ListMatricesResponse> listed;
    for (int attempt = 0; attempt < 100; ++attempt) {
      listed = client_->ListMatrices();
      ASSERT_TRUE(listed.ok()) << listed.status();
      if (listed->matrices_size() == 0 && listed->resident_bytes() == 0) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
    EXPECT_EQ(listed->matrices_size(), 0) << listed->DebugString();
    EXPECT_EQ(listed->resident_bytes(), 0u);
  }

  // Sends `chunks` as one Upload stream, then ends it; the server's status.
  grpc::Status SendUpload(const std::vector<v1::UploadChunk>& chunks,
                          v1::ResidentMatrix* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    std::unique_ptr<grpc::ClientWriter<v1::UploadChunk>> writer = stub_->Upload(&context, response);
    for (const v1::UploadChunk& chunk : chunks) {
      if (!writer->Write(chunk)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  // The chunks of a well-formed upload of a 4 x 3 float64 matrix, 32 bytes each (3 chunks), the
  // CRC32C in the last.
  static std::vector<v1::UploadChunk> GoodChunks(const std::string& bytes) {
    std::vector<v1::UploadChunk> chunks;
    for (size_t at = 0; at < bytes.size(); at += 32) {
      v1::UploadChunk chunk;
      if (at == 0) {
        chunk.set_rows(4);
        chunk.set_cols(3);
        chunk.set_dtype(v1::DTYPE_FLOAT64);
      }
      chunk.set_offset(at);
      chunk.set_data(bytes.substr(at, 32));
      chunks.push_back(chunk);
    }
    chunks.back().mutable_checksum()->set_crc32c(
        Crc32c(0, std::as_bytes(std::span(bytes.data(), bytes.size()))));
    return chunks;
  }

  void ExpectRefused(const std::vector<v1::UploadChunk>& chunks, grpc::StatusCode code,
                     const std::string& problem) {
    v1::ResidentMatrix response;
    const grpc::Status status = SendUpload(chunks, &response);
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(problem));
    ExpectNothingResident();
  }

  std::unique_ptr<v1::MatrixService::Stub> stub_;

 private:
  static inline MatrixServer* server_ = nullptr;
  static inline Client* client_ = nullptr;
};

constexpr v1::DType kEveryDType[] = {v1::DTYPE_FLOAT32,    v1::DTYPE_FLOAT64, v1::DTYPE_COMPLEX64,
                                     v1::DTYPE_COMPLEX128, v1::DTYPE_INT64,   v1::DTYPE_UINT32};

TEST_F(ResidentRpcTest, EveryDTypeAndChunkSizeRoundTripsBitForBit) {
  for (const v1::DType dtype : kEveryDType) {
    // Odd sizes: chunks end inside elements and rows.
    const v1::Matrix matrix = RandomMatrix(37, 23, dtype, dtype);
    for (const uint64_t chunk_bytes : {uint64_t{13}, uint64_t{4096}, uint64_t{4} << 20}) {
      SCOPED_TRACE(absl::StrCat(v1::DType_Name(dtype), ", chunks of ", chunk_bytes));
      absl::StatusOr<RemoteMatrix> remote =
          client().Upload(matrix, {.chunk_bytes = chunk_bytes, .parallel_streams = 1});
      ASSERT_TRUE(remote.ok()) << remote.status();
      EXPECT_EQ(remote->rows(), 37);
      EXPECT_EQ(remote->cols(), 23);
      EXPECT_EQ(remote->dtype(), dtype);
      EXPECT_EQ(remote->bytes(), matrix.data().size());
      EXPECT_EQ(remote->handle().size(), 32u);
      absl::StatusOr<v1::Matrix> back =
          client().Download(remote->handle(), {.chunk_bytes = chunk_bytes});
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(back->rows(), 37);
      EXPECT_EQ(back->cols(), 23);
      EXPECT_EQ(back->dtype(), dtype);
      EXPECT_TRUE(back->data() == matrix.data());
    }
  }
}

TEST_F(ResidentRpcTest, ParallelPartsRoundTripBitForBit) {
  const v1::Matrix matrix = RandomMatrix(101, 57, v1::DTYPE_COMPLEX128, 5);
  std::atomic<uint64_t> last_done{0};
  absl::StatusOr<RemoteMatrix> remote =
      client().Upload(matrix, {.chunk_bytes = 1000,
                               .parallel_streams = 3,
                               .parallel_min_bytes = 0,
                               .label = "parts",
                               .progress = [&](uint64_t done, uint64_t total) {
                                 EXPECT_EQ(total, matrix.data().size());
                                 last_done = done;
                               }});
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ(last_done.load(), matrix.data().size());
  EXPECT_EQ(remote->info().missing_bytes(), 0u);
  absl::StatusOr<v1::Matrix> back = client().Download(remote->handle());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->data() == matrix.data());
  // A row range: rows [10, 20).
  absl::StatusOr<v1::Matrix> rows =
      client().Download(remote->handle(), {.rows = std::make_pair(10, 20), .chunk_bytes = 777});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->rows(), 10);
  const size_t row_bytes = 57 * 16;
  EXPECT_TRUE(rows->data() == matrix.data().substr(10 * row_bytes, 10 * row_bytes));
}

TEST_F(ResidentRpcTest, OperationByHandleMatchesInline) {
  const v1::Matrix a = WellConditioned(40, 1);
  absl::StatusOr<RemoteMatrix> remote = client().Upload(a);
  ASSERT_TRUE(remote.ok()) << remote.status();
  v1::DeterminantRequest inline_request;
  *inline_request.mutable_matrix() = a;
  absl::StatusOr<v1::DeterminantResponse> by_value = client().Determinant(inline_request);
  absl::StatusOr<v1::DeterminantResponse> by_handle = client().Determinant(*remote);
  ASSERT_TRUE(by_value.ok()) << by_value.status();
  ASSERT_TRUE(by_handle.ok()) << by_handle.status();
  EXPECT_EQ(by_handle->log_abs(), by_value->log_abs());
  EXPECT_EQ(by_handle->sign(), by_value->sign());
}

TEST_F(ResidentRpcTest, GapIsRefused) {
  std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  chunks[1].set_offset(40);
  ExpectRefused(chunks, grpc::StatusCode::INVALID_ARGUMENT, "a gap");
}

TEST_F(ResidentRpcTest, OverlapIsRefused) {
  std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  chunks[1].set_offset(24);
  ExpectRefused(chunks, grpc::StatusCode::INVALID_ARGUMENT, "an overlap");
}

TEST_F(ResidentRpcTest, TooFewBytesAreRefused) {
  std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  chunks.erase(chunks.begin() + 1, chunks.end());
  chunks[0].mutable_checksum()->set_crc32c(0);
  ExpectRefused(chunks, grpc::StatusCode::INVALID_ARGUMENT, "ended after 32 of the 96 bytes");
}

TEST_F(ResidentRpcTest, TooManyBytesAreRefused) {
  std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  chunks.back().mutable_data()->append(8, 'x');
  ExpectRefused(chunks, grpc::StatusCode::INVALID_ARGUMENT, "past the end");
}

TEST_F(ResidentRpcTest, BadChecksumIsRefused) {
  std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  chunks.back().mutable_checksum()->set_crc32c(chunks.back().checksum().crc32c() ^ 1);
  ExpectRefused(chunks, grpc::StatusCode::INVALID_ARGUMENT, "checksum mismatch");
}

TEST_F(ResidentRpcTest, MissingChecksumIsRefused) {
  std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  chunks.back().clear_checksum();
  ExpectRefused(chunks, grpc::StatusCode::INVALID_ARGUMENT, "no checksum");
}

TEST_F(ResidentRpcTest, DTypeChangeMidStreamIsRefused) {
  std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  chunks[1].set_dtype(v1::DTYPE_INT64);
  ExpectRefused(chunks, grpc::StatusCode::INVALID_ARGUMENT, "cannot change mid-stream");
}

TEST_F(ResidentRpcTest, ShapeChangeMidStreamIsRefused) {
  std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  chunks[2].set_rows(3);
  chunks[2].set_cols(4);
  ExpectRefused(chunks, grpc::StatusCode::INVALID_ARGUMENT, "cannot change mid-stream");
}

TEST_F(ResidentRpcTest, ClientCancellingMidStreamKeepsNothing) {
  const std::vector<v1::UploadChunk> chunks = GoodChunks(RandomBytes(96, 1));
  grpc::ClientContext context;
  v1::ResidentMatrix response;
  std::unique_ptr<grpc::ClientWriter<v1::UploadChunk>> writer = stub_->Upload(&context, &response);
  ASSERT_TRUE(writer->Write(chunks[0]));
  context.TryCancel();
  const grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  // The server learns of the cancellation asynchronously; TearDown waits for it.
}

TEST_F(ResidentRpcTest, ReleasedHandleIsNotFound) {
  absl::StatusOr<RemoteMatrix> remote = client().Upload(WellConditioned(8, 2));
  ASSERT_TRUE(remote.ok()) << remote.status();
  const std::string handle = remote->Detach();
  EXPECT_FALSE(remote->owns());
  absl::StatusOr<uint64_t> freed = client().Release(handle);
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_EQ(*freed, 8u * 8u * 8u);
  v1::DeterminantRequest request;
  request.mutable_matrix_ref()->set_handle(handle);
  EXPECT_EQ(client().Determinant(request).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client().Download(handle).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client().Release(handle).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ResidentRpcTest, RemoteMatrixReleasesWhenDestroyedNotWhenMoved) {
  {
    absl::StatusOr<RemoteMatrix> remote = client().Upload(WellConditioned(8, 3));
    ASSERT_TRUE(remote.ok()) << remote.status();
    RemoteMatrix moved = *std::move(remote);
    RemoteMatrix target;
    target = std::move(moved);
    EXPECT_TRUE(target.owns());
    absl::StatusOr<v1::ListMatricesResponse> listed = client().ListMatrices();
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(listed->matrices_size(), 1);
  }
  ExpectNothingResident();
}

TEST_F(ResidentRpcTest, DetachedMatrixStaysUntilReleased) {
  std::string handle;
  {
    absl::StatusOr<RemoteMatrix> remote = client().Upload(WellConditioned(8, 4));
    ASSERT_TRUE(remote.ok()) << remote.status();
    handle = remote->Detach();
  }
  absl::StatusOr<v1::ListMatricesResponse> listed = client().ListMatrices();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->matrices_size(), 1);
  EXPECT_EQ(listed->matrices(0).handle(), handle);
  ASSERT_TRUE(client().Release(handle).ok());
}

TEST_F(ResidentRpcTest, ChainedMultiplyThenDeterminantMatchesInline) {
  const v1::Matrix a = WellConditioned(32, 5);
  const v1::Matrix b = WellConditioned(32, 6);
  absl::StatusOr<RemoteMatrix> ra = client().Upload(a);
  absl::StatusOr<RemoteMatrix> rb = client().Upload(b);
  ASSERT_TRUE(ra.ok() && rb.ok());
  v1::MultiplyRequest keep;
  keep.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::MultiplyResponse> product = client().Multiply(*ra, *rb, keep);
  ASSERT_TRUE(product.ok()) << product.status();
  std::map<std::string, RemoteMatrix> kept = client().Adopt(product->kept());
  ASSERT_EQ(kept.count("c"), 1u);
  EXPECT_EQ(kept.at("c").rows(), 32);
  absl::StatusOr<v1::DeterminantResponse> chained = client().Determinant(kept.at("c"));
  ASSERT_TRUE(chained.ok()) << chained.status();

  v1::MultiplyRequest inline_multiply;
  *inline_multiply.mutable_a() = a;
  *inline_multiply.mutable_b() = b;
  absl::StatusOr<v1::MultiplyResponse> inline_product = client().Multiply(inline_multiply);
  ASSERT_TRUE(inline_product.ok()) << inline_product.status();
  v1::DeterminantRequest inline_det;
  *inline_det.mutable_matrix() = inline_product->c();
  absl::StatusOr<v1::DeterminantResponse> expected = client().Determinant(inline_det);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_NEAR(chained->log_abs(), expected->log_abs(), 1e-12 * std::abs(expected->log_abs()));
  EXPECT_EQ(chained->sign(), expected->sign());
}

TEST_F(ResidentRpcTest, KeepResultWithoutAlsoInlineLeavesInlineFieldsOut) {
  absl::StatusOr<RemoteMatrix> a = client().Upload(WellConditioned(16, 7));
  ASSERT_TRUE(a.ok()) << a.status();
  v1::MultiplyRequest multiply;
  multiply.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::MultiplyResponse> product = client().Multiply(*a, *a, multiply);
  ASSERT_TRUE(product.ok()) << product.status();
  EXPECT_FALSE(product->has_c());
  const std::map<std::string, RemoteMatrix> kept_c = client().Adopt(product->kept());
  EXPECT_EQ(kept_c.size(), 1u);

  v1::FactorizeRequest factorize;
  factorize.set_kind(v1::FACTORIZATION_KIND_LU);
  factorize.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::FactorizeResponse> lu = client().Factorize(*a, factorize);
  ASSERT_TRUE(lu.ok()) << lu.status();
  EXPECT_FALSE(lu->has_lu());
  // "factorization" and "lu" name one handle: one owner, released once.
  const std::map<std::string, RemoteMatrix> kept_lu = client().Adopt(lu->kept());
  ASSERT_EQ(kept_lu.size(), 2u);
  EXPECT_EQ(kept_lu.at("factorization").handle(), kept_lu.at("lu").handle());
  EXPECT_NE(kept_lu.at("factorization").owns(), kept_lu.at("lu").owns());

  multiply.mutable_result_options()->set_also_inline(true);
  product = client().Multiply(*a, *a, multiply);
  ASSERT_TRUE(product.ok()) << product.status();
  EXPECT_TRUE(product->has_c());
  const std::map<std::string, RemoteMatrix> kept_too = client().Adopt(product->kept());
  ASSERT_EQ(kept_too.count("c"), 1u);
  absl::StatusOr<v1::Matrix> downloaded = client().Download(kept_too.at("c").handle());
  ASSERT_TRUE(downloaded.ok()) << downloaded.status();
  EXPECT_TRUE(downloaded->data() == product->c().data());
}

TEST_F(ResidentRpcTest, TwoClientsUseOneHandleAtOnce) {
  const v1::Matrix a = WellConditioned(64, 8);
  absl::StatusOr<RemoteMatrix> remote = client().Upload(a);
  ASSERT_TRUE(remote.ok()) << remote.status();
  absl::StatusOr<v1::DeterminantResponse> expected = client().Determinant(*remote);
  ASSERT_TRUE(expected.ok()) << expected.status();
  Client other(server_address(), {.deadline = absl::Seconds(30)});
  std::atomic<int> matching{0};
  auto run = [&](Client& c) {
    for (int i = 0; i < 10; ++i) {
      absl::StatusOr<v1::DeterminantResponse> r = c.Determinant(*remote);
      if (r.ok() && r->log_abs() == expected->log_abs()) ++matching;
    }
  };
  std::thread first([&] { run(client()); });
  std::thread second([&] { run(other); });
  first.join();
  second.join();
  EXPECT_EQ(matching.load(), 20);
}

TEST_F(ResidentRpcTest, InlineRequestOverTheClientLimitPointsToUpload) {
  Client small(server_address(), {.deadline = absl::Seconds(30), .max_message_bytes = 1 << 20});
  v1::DeterminantRequest request;
  *request.mutable_matrix() = RandomMatrix(512, 512, v1::DTYPE_FLOAT64, 9);
  const absl::Status status = small.Determinant(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), AllOf(HasSubstr(absl::StrCat(request.ByteSizeLong(), " bytes")),
                                      HasSubstr("1048576"), HasSubstr("Upload")));
  // The same matrix goes through Upload.
  absl::StatusOr<RemoteMatrix> remote = small.Upload(request.matrix());
  EXPECT_TRUE(remote.ok()) << remote.status();
}

TEST(ResidentTtl, IdleMatrixExpires) {
  std::unique_ptr<MatrixServer> server = StartResidentServer(absl::Milliseconds(300));
  ASSERT_NE(server, nullptr);
  Client client(server->address(), {.deadline = absl::Seconds(30)});
  absl::StatusOr<RemoteMatrix> remote = client.Upload(WellConditioned(8, 10));
  ASSERT_TRUE(remote.ok()) << remote.status();
  const std::string handle = remote->handle();
  absl::StatusOr<v1::ListMatricesResponse> listed = client.ListMatrices();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->matrices_size(), 1);
  absl::SleepFor(absl::Seconds(1));
  listed = client.ListMatrices();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->matrices_size(), 0);
  EXPECT_EQ(listed->resident_bytes(), 0u);
  EXPECT_EQ(client.Download(handle).status().code(), absl::StatusCode::kNotFound);
  remote->Detach();
}

}  // namespace
}  // namespace matrixd::server::testing
