#include "core/matrix_generator.h"

#include <algorithm>
#include <complex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/distributed_resident_matrix.h"
#include "core/status_macros.h"

namespace matrixd {
namespace {

template <typename Scalar, int Parts>
void Fill(const GeneratorOptions& options, const GeneratedRows& rows, int64_t first_row,
          int64_t count, int64_t cols, std::byte* out) {
  auto* scalars = reinterpret_cast<Scalar*>(out);
  for (int64_t r = 0; r < count; ++r) {
    const int64_t i = rows.Global(first_row + r);
    for (int64_t j = 0; j < cols; ++j) {
      generator::Entry<Scalar, Parts>(options, i, j, cols, scalars + (r * cols + j) * Parts);
    }
  }
}

// Local rows [first_row, first_row + count) into `out`.
void FillRows(const GeneratorOptions& options, const GeneratedRows& rows, int64_t first_row,
              int64_t count, int64_t cols, DType dtype, std::byte* out) {
  generator::ForEntryType(dtype, [&]<typename Scalar, int Parts>() {
    Fill<Scalar, Parts>(options, rows, first_row, count, cols, out);
  });
}

// One matrix (not distributed) whose local rows are `rows`' global rows.
absl::Status GenerateRows(ResidentMatrix& matrix, const GeneratorOptions& options,
                          const GeneratedRows& rows) {
  if (matrix.GeneratesInPlace()) return matrix.GenerateInPlace(options, rows);
  const int64_t cols = matrix.cols();
  const int64_t row_bytes = cols * static_cast<int64_t>(ElementSize(matrix.dtype()));
  // About 8 MiB per write: large enough for copy-engine speed, small enough to stay in cache.
  const int64_t block_rows =
      std::max<int64_t>(1, (int64_t{8} << 20) / std::max<int64_t>(1, row_bytes));
  std::vector<std::byte> block;
  for (int64_t first = 0; first < matrix.rows(); first += block_rows) {
    const int64_t count = std::min(block_rows, matrix.rows() - first);
    block.resize(static_cast<size_t>(count * row_bytes));
    FillRows(options, rows, first, count, cols, matrix.dtype(), block.data());
    MATRIXD_RETURN_IF_ERROR(matrix.Write(static_cast<uint64_t>(first * row_bytes), block));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckGenerator(const GeneratorOptions& options, DType dtype) {
  if (options.kind == GeneratorKind::kHilbert && !IsFloating(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a Hilbert matrix needs a floating dtype, not ", DTypeName(dtype)));
  }
  return absl::OkStatus();
}

absl::Status GenerateOnHost(const GeneratorOptions& options, const GeneratedRows& rows,
                            int64_t local_rows, int64_t cols, DType dtype,
                            std::span<std::byte> out) {
  MATRIXD_RETURN_IF_ERROR(CheckGenerator(options, dtype));
  const uint64_t want =
      static_cast<uint64_t>(local_rows) * static_cast<uint64_t>(cols) * ElementSize(dtype);
  if (out.size() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("GenerateOnHost: ", out.size(), " bytes for ", want));
  }
  FillRows(options, rows, 0, local_rows, cols, dtype, out.data());
  return absl::OkStatus();
}

absl::Status GenerateInto(ResidentMatrix& matrix, const GeneratorOptions& options) {
  MATRIXD_RETURN_IF_ERROR(CheckGenerator(options, matrix.dtype()));
  if (const DistributedResidentMatrix* distributed = matrix.distributed(); distributed != nullptr) {
    for (int g = 0; g < distributed->part_count(); ++g) {
      ResidentMatrix* part = distributed->part(g);
      if (part == nullptr) continue;  // no rows on this device
      MATRIXD_RETURN_IF_ERROR(GenerateRows(*part, options, distributed->row_layout().RowsOf(g)));
    }
  } else {
    MATRIXD_RETURN_IF_ERROR(GenerateRows(matrix, options, GeneratedRows{}));
  }
  return matrix.Flush();
}

}  // namespace matrixd
