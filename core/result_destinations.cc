#include "core/result_destinations.h"

#include <cstring>
#include <utility>

namespace matrixd {

void ResultDestinations::Add(std::string name, std::span<std::byte> bytes) {
  entries_.push_back({std::move(name), bytes});
}

std::byte* ResultDestinations::Find(std::string_view name, size_t byte_size) const {
  for (const Entry& entry : entries_) {
    if (entry.name == name && entry.bytes.size() == byte_size && byte_size > 0) {
      return entry.bytes.data();
    }
  }
  return nullptr;
}

Matrix ResultDestinations::MakeForOverwrite(std::string_view name, int64_t rows, int64_t cols,
                                            DType dtype) const {
  const size_t byte_size = static_cast<size_t>(rows * cols) * ElementSize(dtype);
  if (std::byte* bytes = Find(name, byte_size); bytes != nullptr) {
    return Matrix::Borrowing(rows, cols, dtype, bytes);
  }
  return Matrix::ForOverwrite(rows, cols, dtype);
}

Matrix ResultDestinations::Make(std::string_view name, int64_t rows, int64_t cols,
                                DType dtype) const {
  Matrix matrix = MakeForOverwrite(name, rows, cols, dtype);
  if (matrix.byte_size() > 0) std::memset(matrix.mutable_bytes(), 0, matrix.byte_size());
  return matrix;
}

Matrix ResultDestinations::CopyOf(std::string_view name, const MatrixView& source) const {
  if (std::byte* bytes = Find(name, source.byte_size()); bytes != nullptr) {
    if (bytes != source.data) std::memmove(bytes, source.data, source.byte_size());
    return Matrix::Borrowing(source.rows, source.cols, source.dtype, bytes);
  }
  return Matrix::CopyOf(source);
}

std::span<int64_t> ResultDestinations::Indices(std::string_view name, size_t count) const {
  std::byte* bytes = Find(name, count * sizeof(int64_t));
  if (bytes == nullptr) return {};
  return {reinterpret_cast<int64_t*>(bytes), count};
}

}  // namespace matrixd
