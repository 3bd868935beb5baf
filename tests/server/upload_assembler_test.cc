// UploadAssembler: streamed uploads reassembled bit for bit, and every kind of bad stream refused
// with its problem named and nothing kept.
#include "server/upload_assembler.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/matrix_conversion.h"

namespace matrixd::server {
namespace {

using ::testing::HasSubstr;

std::string RandomBytes(size_t size, unsigned seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  return bytes;
}

uint32_t CrcOf(const std::string& bytes) {
  return Crc32c(0, std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()),
                                              bytes.size()));
}

// The stream a well-behaved client sends: header on the first chunk, checksum on the last.
std::vector<v1::UploadChunk> Chunks(int64_t rows, int64_t cols, v1::DType dtype,
                                    const std::string& bytes, size_t chunk) {
  std::vector<v1::UploadChunk> chunks;
  for (size_t at = 0; at < bytes.size() || chunks.empty(); at += chunk) {
    v1::UploadChunk& c = chunks.emplace_back();
    if (at == 0) {
      c.set_rows(rows);
      c.set_cols(cols);
      c.set_dtype(dtype);
    }
    c.set_offset(at);
    c.set_data(bytes.substr(at, chunk));
  }
  chunks.back().mutable_checksum()->set_crc32c(CrcOf(bytes));
  return chunks;
}

class UploadAssemblerTest : public ::testing::Test {
 protected:
  // Feeds `chunks`; the first error, or Finish's.
  absl::StatusOr<ResidentInfo> Upload(const std::vector<v1::UploadChunk>& chunks) {
    UploadAssembler assembler(registry_);
    for (const v1::UploadChunk& chunk : chunks) {
      if (absl::Status s = assembler.Add(chunk); !s.ok()) return s;
    }
    return assembler.Finish();
  }

  std::string ReadBack(const std::string& handle) {
    absl::StatusOr<ResidentLease> lease = registry_.Acquire(handle, "m");
    EXPECT_TRUE(lease.ok());
    std::string bytes(lease->info().bytes, '\0');
    EXPECT_TRUE(lease->Read(0, std::as_writable_bytes(std::span<char>(bytes))).ok());
    return bytes;
  }

  void ExpectRefused(const std::vector<v1::UploadChunk>& chunks, absl::string_view problem) {
    absl::StatusOr<ResidentInfo> info = Upload(chunks);
    EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument) << info.status();
    EXPECT_THAT(info.status().message(), HasSubstr(problem));
    EXPECT_TRUE(registry_.List().empty());
    EXPECT_EQ(registry_.resident_bytes(), 0u);
  }

  std::unique_ptr<Backend> backend_ = MakeCpuBackend({.threads = 1});
  ResidentRegistry registry_{*backend_, {}, {.limit_bytes = 1 << 22}};
};

TEST_F(UploadAssemblerTest, EveryDtypeAndChunkSizeRoundTripsBitForBit) {
  const std::vector<std::pair<v1::DType, size_t>> dtypes = {
      {v1::DTYPE_FLOAT32, 4},     {v1::DTYPE_FLOAT64, 8}, {v1::DTYPE_COMPLEX64, 8},
      {v1::DTYPE_COMPLEX128, 16}, {v1::DTYPE_INT64, 8},   {v1::DTYPE_UINT32, 4}};
  unsigned seed = 1;
  for (const auto& [dtype, size] : dtypes) {
    const std::string bytes = RandomBytes(37 * 19 * size, seed++);
    for (const size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, bytes.size()}) {
      absl::StatusOr<ResidentInfo> info = Upload(Chunks(37, 19, dtype, bytes, chunk));
      ASSERT_TRUE(info.ok()) << v1::DType_Name(dtype) << " chunk " << chunk << ": "
                             << info.status();
      EXPECT_EQ(info->rows, 37);
      EXPECT_EQ(info->cols, 19);
      EXPECT_EQ(ToProto(info->dtype), dtype);
      EXPECT_EQ(ReadBack(info->handle), bytes) << v1::DType_Name(dtype) << " chunk " << chunk;
    }
  }
}

TEST_F(UploadAssemblerTest, NonFiniteEntrySplitAcrossChunksIsSeen) {
  std::vector<double> values(10, 1.0);
  values[4] = std::numeric_limits<double>::quiet_NaN();
  const std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * 8);
  absl::StatusOr<ResidentInfo> info = Upload(Chunks(2, 5, v1::DTYPE_FLOAT64, bytes, 5));
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->finite);
  values[4] = 2.0;
  const std::string finite(reinterpret_cast<const char*>(values.data()), values.size() * 8);
  EXPECT_TRUE(Upload(Chunks(2, 5, v1::DTYPE_FLOAT64, finite, 5))->finite);
}

TEST_F(UploadAssemblerTest, GapIsRefused) {
  std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 2), 32);
  chunks.erase(chunks.begin() + 1);
  ExpectRefused(chunks, "a gap");
}

TEST_F(UploadAssemblerTest, OverlapIsRefused) {
  std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 3), 32);
  chunks[2].set_offset(40);
  ExpectRefused(chunks, "an overlap");
}

TEST_F(UploadAssemblerTest, BytesPastTheEndAreRefused) {
  std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 4), 64);
  chunks.back().mutable_data()->append("12345678");
  ExpectRefused(chunks, "past the end");
}

TEST_F(UploadAssemblerTest, ShapeOrDtypeChangeMidStreamIsRefused) {
  std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 5), 32);
  chunks[1].set_rows(8);
  ExpectRefused(chunks, "cannot change mid-stream");
  chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 5), 32);
  chunks[2].set_dtype(v1::DTYPE_INT64);
  ExpectRefused(chunks, "cannot change mid-stream");
}

TEST_F(UploadAssemblerTest, MissingBytesAreRefused) {
  std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 6), 32);
  chunks.back().clear_data();
  ExpectRefused(chunks, "ended after 96 of the 128 bytes");
}

TEST_F(UploadAssemblerTest, MissingWrongOrRepeatedChecksumIsRefused) {
  std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 7), 32);
  chunks.back().clear_checksum();
  ExpectRefused(chunks, "no checksum");
  chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 7), 32);
  chunks.back().mutable_checksum()->set_crc32c(chunks.back().checksum().crc32c() ^ 1u);
  ExpectRefused(chunks, "checksum mismatch");
  chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 7), 32);
  *chunks.front().mutable_checksum() = chunks.back().checksum();
  ExpectRefused(chunks, "more than once");
}

TEST_F(UploadAssemblerTest, CorruptedByteIsCaughtByTheChecksum) {
  std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 8), 32);
  (*chunks[1].mutable_data())[3] ^= 0x10;
  ExpectRefused(chunks, "checksum mismatch");
}

TEST_F(UploadAssemblerTest, EmptyStreamAndBadHeaderAreRefused) {
  ExpectRefused({}, "before its first message");
  std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 9), 32);
  chunks[0].set_rows(0);
  ExpectRefused(chunks, "rows and cols must be >= 1");
  chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 9), 32);
  chunks[0].set_dtype(v1::DTYPE_UNSPECIFIED);
  ExpectRefused(chunks, "dtype is unspecified");
}

TEST_F(UploadAssemblerTest, MatrixAboveTheLimitIsResourceExhaustedAndKeepsNothing) {
  v1::UploadChunk header;
  header.set_rows(1024);
  header.set_cols(1024);
  header.set_dtype(v1::DTYPE_FLOAT64);  // 8 MiB > the 4 MiB limit
  UploadAssembler assembler(registry_);
  const absl::Status status = assembler.Add(header);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("--resident_memory_limit"));
  EXPECT_EQ(registry_.resident_bytes(), 0u);
  EXPECT_EQ(assembler.Finish().status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(UploadAssemblerTest, AbandonedUploadGivesItsBytesBack) {
  {
    UploadAssembler assembler(registry_);
    std::vector<v1::UploadChunk> chunks = Chunks(4, 4, v1::DTYPE_FLOAT64, RandomBytes(128, 10), 32);
    ASSERT_TRUE(assembler.Add(chunks[0]).ok());
    EXPECT_EQ(registry_.resident_bytes(), 128u);
  }
  EXPECT_EQ(registry_.resident_bytes(), 0u);
  EXPECT_TRUE(registry_.List().empty());
}

}  // namespace
}  // namespace matrixd::server
