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

// One part of a parallel upload into `handle`: bytes [begin, end) of `whole` in `chunk`-byte
// chunks, the handle on the first, the part's CRC32C on the last.
std::vector<v1::UploadChunk> PartChunks(const std::string& handle, const std::string& whole,
                                        size_t begin, size_t end, size_t chunk) {
  std::vector<v1::UploadChunk> chunks;
  for (size_t at = begin; at < end; at += chunk) {
    v1::UploadChunk& c = chunks.emplace_back();
    if (at == begin) c.set_handle(handle);
    c.set_offset(at);
    c.set_data(whole.substr(at, std::min(chunk, end - at)));
  }
  chunks.back().mutable_checksum()->set_crc32c(CrcOf(whole.substr(begin, end - begin)));
  return chunks;
}

class ParallelUploadTest : public UploadAssemblerTest {
 protected:
  std::string Create(int64_t rows, int64_t cols) {
    absl::StatusOr<ResidentInfo> info =
        registry_.CreateFilling(rows, cols, DType::kFloat64, "parts");
    EXPECT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->missing_bytes, info->bytes);
    return info->handle;
  }
};

TEST_F(ParallelUploadTest, PartsInAnyOrderMakeTheMatrixBitForBit) {
  const std::string whole = RandomBytes(16 * 16 * 8, 20);
  const std::string handle = Create(16, 16);
  // Three parts of odd sizes, sent out of order, each in its own chunk size.
  absl::StatusOr<ResidentInfo> last = Upload(PartChunks(handle, whole, 1200, 2048, 100));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->missing_bytes, 2048u - 848u);
  EXPECT_EQ(registry_.Acquire(handle, "matrix_ref").status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Upload(PartChunks(handle, whole, 0, 400, 64)).ok());
  last = Upload(PartChunks(handle, whole, 400, 1200, 1000));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->missing_bytes, 0u);
  EXPECT_EQ(ReadBack(handle), whole);
}

TEST_F(ParallelUploadTest, PartsThatOverlapAreRefusedAndTheRangeCanBeSentAgain) {
  const std::string whole = RandomBytes(8 * 8 * 8, 21);
  const std::string handle = Create(8, 8);
  UploadAssembler first(registry_);
  for (const v1::UploadChunk& c : PartChunks(handle, whole, 0, 256, 64))
    ASSERT_TRUE(first.Add(c).ok());
  // A second part running into the first one's bytes, from either side.
  absl::StatusOr<ResidentInfo> overlapping = Upload(PartChunks(handle, whole, 192, 512, 64));
  EXPECT_EQ(overlapping.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(overlapping.status().message(), HasSubstr("overlap bytes [0, 256)"));
  UploadAssembler growing(registry_);
  for (const v1::UploadChunk& c : PartChunks(handle, whole, 256, 512, 64)) {
    ASSERT_TRUE(growing.Add(c).ok());
  }
  ASSERT_TRUE(first.Finish().ok());
  ASSERT_TRUE(growing.Finish().ok());
  EXPECT_EQ(ReadBack(handle), whole);
}

TEST_F(ParallelUploadTest, FailedPartGivesItsRangeBackForARetry) {
  const std::string whole = RandomBytes(8 * 8 * 8, 22);
  const std::string handle = Create(8, 8);
  std::vector<v1::UploadChunk> bad = PartChunks(handle, whole, 0, 512, 128);
  bad.back().mutable_checksum()->set_crc32c(CrcOf(whole) ^ 1);
  absl::StatusOr<ResidentInfo> refused = Upload(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("checksum mismatch"));
  absl::StatusOr<ResidentInfo> retried = Upload(PartChunks(handle, whole, 0, 512, 128));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->missing_bytes, 0u);
  EXPECT_EQ(ReadBack(handle), whole);
}

TEST_F(ParallelUploadTest, BadPartsAreRefusedNamingTheProblem) {
  const std::string whole = RandomBytes(4 * 4 * 8, 23);
  const std::string handle = Create(4, 4);
  std::vector<v1::UploadChunk> misaligned = PartChunks(handle, whole, 4, 128, 64);
  EXPECT_THAT(Upload(misaligned).status().message(), HasSubstr("not a multiple of the element"));
  std::vector<v1::UploadChunk> gap = PartChunks(handle, whole, 0, 128, 32);
  gap[1].set_offset(40);
  EXPECT_THAT(Upload(gap).status().message(), HasSubstr("a gap"));
  std::vector<v1::UploadChunk> reshaped = PartChunks(handle, whole, 0, 128, 32);
  reshaped[0].set_rows(5);
  EXPECT_THAT(Upload(reshaped).status().message(), HasSubstr("is 4x4 float64"));
  std::vector<v1::UploadChunk> unknown = PartChunks(std::string(32, 'a'), whole, 0, 128, 32);
  EXPECT_EQ(Upload(unknown).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(Upload(PartChunks(handle, whole, 0, 128, 32)).ok());
  EXPECT_EQ(Upload(PartChunks(handle, whole, 0, 8, 8)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ParallelUploadTest, UnfinishedFillingMatrixIsReleasedAndGivesItsBytesBack) {
  const std::string handle = Create(8, 8);
  EXPECT_EQ(registry_.resident_bytes(), 512u);
  EXPECT_EQ(registry_.List().front().missing_bytes, 512u);
  ASSERT_TRUE(registry_.Release(handle).ok());
  EXPECT_EQ(registry_.resident_bytes(), 0u);
}

}  // namespace
}  // namespace matrixd::server
