#include "client/download_assembler.h"

#include <cstddef>
#include <cstring>
#include <limits>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/matrix_values.h"
#include "core/crc32c.h"

namespace matrixd {
absl::Status DownloadAssembler::Add(v1::DownloadChunk& chunk) {
  if (!started_) {
    const auto element = static_cast<uint64_t>(ElementSize(chunk.dtype()));
    if (chunk.rows() <= 0 || chunk.cols() <= 0 || element == 0 ||
        static_cast<uint64_t>(chunk.cols()) >
            std::numeric_limits<int64_t>::max() / element / static_cast<uint64_t>(chunk.rows())) {
      return absl::DataLossError(
          absl::StrCat("download's first chunk has no valid shape and dtype: ", chunk.rows(), " x ",
                       chunk.cols(), " ", v1::DType_Name(chunk.dtype())));
    }
    started_ = true;
    total_ = static_cast<uint64_t>(chunk.rows()) * static_cast<uint64_t>(chunk.cols()) * element;
    matrix_.set_rows(chunk.rows());
    matrix_.set_cols(chunk.cols());
    matrix_.set_dtype(chunk.dtype());
    matrix_.mutable_data()->resize(total_);
  }
  const std::string& data = chunk.data();
  if (chunk.offset() != received_) {
    return absl::DataLossError(absl::StrCat("download chunk at byte ", chunk.offset(), ", want ",
                                            received_, " (a gap or an overlap)"));
  }
  if (data.size() > total_ - received_) {
    return absl::DataLossError(absl::StrCat("download chunk of ", data.size(), " bytes at byte ",
                                            received_, " runs past the matrix's ", total_,
                                            " bytes"));
  }
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data.data()),
                                         data.size());
  std::memcpy(matrix_.mutable_data()->data() + received_, data.data(), data.size());
  crc_ = Crc32c(crc_, bytes);
  received_ += data.size();
  sent_crc_ = chunk.crc32c();
  return absl::OkStatus();
}

absl::StatusOr<v1::Matrix> DownloadAssembler::Finish() && {
  if (!started_) return absl::DataLossError("download ended before its first chunk");
  if (received_ != total_) {
    return absl::DataLossError(
        absl::StrCat("download ended after ", received_, " of ", total_, " bytes"));
  }
  if (crc_ != sent_crc_) {
    return absl::DataLossError(absl::StrFormat(
        "download's CRC32C is 0x%08x, the server sent 0x%08x: the bytes were damaged on the way",
        crc_, sent_crc_));
  }
  return std::move(matrix_);
}

}  // namespace matrixd
