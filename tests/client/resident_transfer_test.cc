// The client's pure pieces of resident-matrix transfers: splitting an upload into parts and
// chunks, reassembling a download, naming a handle by a prefix, and the progress line.
#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/download_assembler.h"
#include "client/handle_prefix.h"
#include "client/progress_bar.h"
#include "client/upload_chunker.h"
#include "core/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;

std::string Bytes(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + 7) % 251);
  return bytes;
}

std::span<const std::byte> AsBytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

uint32_t CrcOf(const std::string& s) { return Crc32c(0, AsBytes(s)); }

TEST(SplitRows, CoversEveryByteOnceInWholeRows) {
  const std::vector<ByteRange> parts = SplitRows(10, 24, 4);
  ASSERT_EQ(parts.size(), 4u);
  uint64_t at = 0;
  for (const ByteRange& part : parts) {
    EXPECT_EQ(part.begin, at);
    EXPECT_GT(part.end, part.begin);
    EXPECT_EQ(part.begin % 24, 0u);
    EXPECT_EQ(part.end % 24, 0u);
    at = part.end;
  }
  EXPECT_EQ(at, 240u);
}

TEST(SplitRows, NoMorePartsThanRows) {
  EXPECT_EQ(SplitRows(3, 8, 4).size(), 3u);
  EXPECT_EQ(SplitRows(1, 8, 4), (std::vector<ByteRange>{{0, 8}}));
  EXPECT_TRUE(SplitRows(0, 8, 4).empty());
}

// Every message of a chunker, and the bytes they carry in order.
struct Stream {
  std::vector<v1::UploadChunk> chunks;
  std::string data;
};

Stream Drain(UploadChunker& chunker) {
  Stream stream;
  v1::UploadChunk chunk;
  while (chunker.Next(&chunk)) {
    stream.data += chunk.data();
    stream.chunks.push_back(chunk);
  }
  return stream;
}

TEST(UploadChunker, WholeMatrixHeaderChunksThenChecksum) {
  const std::string bytes = Bytes(7 * 3 * 8);
  UploadChunker chunker({.rows = 7, .cols = 3, .dtype = v1::DTYPE_FLOAT64, .label = "a"},
                        AsBytes(bytes), {0, bytes.size()}, 50);
  const Stream stream = Drain(chunker);
  // 168 bytes in chunks of 50: 4 with data, then the checksum.
  ASSERT_EQ(stream.chunks.size(), 5u);
  EXPECT_EQ(stream.chunks[0].rows(), 7);
  EXPECT_EQ(stream.chunks[0].cols(), 3);
  EXPECT_EQ(stream.chunks[0].dtype(), v1::DTYPE_FLOAT64);
  EXPECT_EQ(stream.chunks[0].label(), "a");
  EXPECT_TRUE(stream.chunks[0].handle().empty());
  uint64_t offset = 0;
  for (size_t i = 0; i + 1 < stream.chunks.size(); ++i) {
    EXPECT_EQ(stream.chunks[i].offset(), offset);
    EXPECT_FALSE(stream.chunks[i].has_checksum());
    if (i > 0) {
      EXPECT_EQ(stream.chunks[i].rows(), 0);
    }
    offset += stream.chunks[i].data().size();
  }
  EXPECT_EQ(stream.data, bytes);
  const v1::UploadChunk& last = stream.chunks.back();
  EXPECT_TRUE(last.data().empty());
  ASSERT_TRUE(last.has_checksum());
  EXPECT_EQ(last.checksum().crc32c(), CrcOf(bytes));
  EXPECT_EQ(chunker.bytes_sent(), bytes.size());
}

TEST(UploadChunker, LayoutGoesInTheFirstMessageOnly) {
  const std::string bytes = Bytes(4 * 4 * 8);
  UploadChunker chunker(
      {.rows = 4, .cols = 4, .dtype = v1::DTYPE_FLOAT64, .layout = v1::RESIDENT_LAYOUT_DISTRIBUTED},
      AsBytes(bytes), {0, bytes.size()}, 40);
  const Stream stream = Drain(chunker);
  ASSERT_GT(stream.chunks.size(), 2u);
  EXPECT_EQ(stream.chunks[0].layout(), v1::RESIDENT_LAYOUT_DISTRIBUTED);
  EXPECT_EQ(stream.chunks[1].layout(), v1::RESIDENT_LAYOUT_SINGLE_DEVICE);
}

TEST(UploadChunker, PartNamesHandleAndChecksumsItsRangeOnly) {
  const std::string bytes = Bytes(400);
  UploadChunker chunker({.handle = "abc"}, AsBytes(bytes), {160, 320}, 64);
  const Stream stream = Drain(chunker);
  ASSERT_FALSE(stream.chunks.empty());
  EXPECT_EQ(stream.chunks[0].handle(), "abc");
  EXPECT_EQ(stream.chunks[0].rows(), 0);
  EXPECT_EQ(stream.chunks[0].offset(), 160u);
  EXPECT_EQ(stream.data, bytes.substr(160, 160));
  EXPECT_EQ(stream.chunks.back().checksum().crc32c(), CrcOf(bytes.substr(160, 160)));
}

// Download chunks of `bytes` as the server sends them (CRC32C in the last).
std::vector<v1::DownloadChunk> DownloadChunks(const std::string& bytes, int64_t rows, int64_t cols,
                                              size_t chunk_bytes) {
  std::vector<v1::DownloadChunk> chunks;
  for (size_t at = 0; at < bytes.size(); at += chunk_bytes) {
    v1::DownloadChunk chunk;
    if (at == 0) {
      chunk.set_rows(rows);
      chunk.set_cols(cols);
      chunk.set_dtype(v1::DTYPE_FLOAT32);
    }
    chunk.set_offset(at);
    chunk.set_data(bytes.substr(at, chunk_bytes));
    chunks.push_back(chunk);
  }
  chunks.back().set_crc32c(CrcOf(bytes));
  return chunks;
}

TEST(DownloadAssembler, ReassemblesTheMatrix) {
  const std::string bytes = Bytes(5 * 3 * 4);
  DownloadAssembler assembler;
  for (v1::DownloadChunk& chunk : DownloadChunks(bytes, 5, 3, 7)) {
    ASSERT_TRUE(assembler.Add(chunk).ok());
  }
  EXPECT_EQ(assembler.total_bytes(), bytes.size());
  absl::StatusOr<v1::Matrix> matrix = std::move(assembler).Finish();
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->rows(), 5);
  EXPECT_EQ(matrix->cols(), 3);
  EXPECT_EQ(matrix->dtype(), v1::DTYPE_FLOAT32);
  EXPECT_EQ(matrix->data(), bytes);
}

TEST(DownloadAssembler, DamagedBytesAreDataLoss) {
  const std::string bytes = Bytes(60);
  std::vector<v1::DownloadChunk> chunks = DownloadChunks(bytes, 5, 3, 16);
  (*chunks[1].mutable_data())[3] ^= 1;
  DownloadAssembler assembler;
  for (v1::DownloadChunk& chunk : chunks) ASSERT_TRUE(assembler.Add(chunk).ok());
  const absl::Status status = std::move(assembler).Finish().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("CRC32C"));
}

TEST(DownloadAssembler, GapIsDataLoss) {
  std::vector<v1::DownloadChunk> chunks = DownloadChunks(Bytes(60), 5, 3, 16);
  DownloadAssembler assembler;
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  const absl::Status status = assembler.Add(chunks[2]);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("gap"));
}

TEST(DownloadAssembler, ChunkPastTheEndIsDataLoss) {
  std::vector<v1::DownloadChunk> chunks = DownloadChunks(Bytes(60), 5, 3, 16);
  chunks[3].mutable_data()->append("xx");
  DownloadAssembler assembler;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(assembler.Add(chunks[i]).ok());
  EXPECT_EQ(assembler.Add(chunks[3]).code(), absl::StatusCode::kDataLoss);
}

TEST(DownloadAssembler, ShortStreamIsDataLoss) {
  std::vector<v1::DownloadChunk> chunks = DownloadChunks(Bytes(60), 5, 3, 16);
  DownloadAssembler assembler;
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  const absl::Status status = std::move(assembler).Finish().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("16 of 60 bytes"));
}

TEST(DownloadAssembler, FirstChunkWithoutShapeIsDataLoss) {
  v1::DownloadChunk chunk;
  chunk.set_data("abcd");
  DownloadAssembler assembler;
  EXPECT_EQ(assembler.Add(chunk).code(), absl::StatusCode::kDataLoss);
}

v1::ListMatricesResponse Listed(const std::vector<std::string>& handles) {
  v1::ListMatricesResponse listed;
  for (const std::string& handle : handles) listed.add_matrices()->set_handle(handle);
  return listed;
}

TEST(HandlePrefix, UniquePrefixResolves) {
  const v1::ListMatricesResponse listed = Listed({"ab12", "ab34", "cd56"});
  absl::StatusOr<v1::ResidentMatrix> m = ResolveHandlePrefix("ab3", listed);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->handle(), "ab34");
  m = ResolveHandlePrefix("CD", listed);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->handle(), "cd56");
  m = ResolveHandlePrefix("ab12", listed);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->handle(), "ab12");
}

TEST(HandlePrefix, AmbiguousPrefixNamesTheCandidates) {
  const absl::Status status = ResolveHandlePrefix("ab", Listed({"ab12", "ab34", "cd56"})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("ambiguous"));
  EXPECT_THAT(status.message(), HasSubstr("ab12"));
  EXPECT_THAT(status.message(), HasSubstr("ab34"));
}

TEST(HandlePrefix, UnknownPrefixIsNotFound) {
  EXPECT_EQ(ResolveHandlePrefix("ef", Listed({"ab12"})).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveHandlePrefix("", Listed({"ab12"})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HandlePrefix, OnlyAtSignArgumentsAreHandles) {
  EXPECT_EQ(HandleArgument("@ab12"), "ab12");
  EXPECT_EQ(HandleArgument("a.npy"), std::nullopt);
}

TEST(ProgressLine, ShowsFractionBytesAndRate) {
  const std::string line =
      FormatProgressLine("upload", uint64_t{1} << 29, uint64_t{1} << 30, absl::Seconds(1));
  EXPECT_THAT(line, HasSubstr("upload [##########          ]  50%"));
  EXPECT_THAT(line, HasSubstr("512.00 MiB of 1.00 GiB"));
  EXPECT_THAT(line, HasSubstr("0.54 GB/s"));
}

TEST(ProgressBar, DrawsLargeTransfersOnATerminalAndEndsItsLine) {
  std::ostringstream out;
  const uint64_t total = kProgressBarMinBytes + 1;
  {
    ProgressBar bar(out, "download", total, /*enabled=*/true);
    bar.Update(total, total);
    EXPECT_THAT(out.str(), HasSubstr("\rdownload [####################] 100%"));
    bar.Done();
    EXPECT_EQ(out.str().back(), '\n');
  }
  EXPECT_EQ(out.str().find('\n'), out.str().size() - 1);  // Done() ended the line once
}

TEST(ProgressBar, SilentForSmallTransfersOrWithoutTerminal) {
  std::ostringstream out;
  {
    ProgressBar small(out, "upload", kProgressBarMinBytes, /*enabled=*/true);
    small.Update(kProgressBarMinBytes, kProgressBarMinBytes);
    ProgressBar piped(out, "upload", kProgressBarMinBytes * 2, /*enabled=*/false);
    piped.Update(kProgressBarMinBytes * 2, kProgressBarMinBytes * 2);
  }
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace matrixd
