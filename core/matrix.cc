#include "core/matrix.h"

#include <utility>

namespace matrixd {

size_t ElementSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kUInt32:
      return 4;
    case DType::kFloat64:
    case DType::kComplex64:
    case DType::kInt64:
      return 8;
    case DType::kComplex128:
      return 16;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kComplex64:
      return "complex64";
    case DType::kComplex128:
      return "complex128";
    case DType::kInt64:
      return "int64";
    case DType::kUInt32:
      return "uint32";
  }
  return "unknown";
}

bool IsComplex(DType dtype) { return dtype == DType::kComplex64 || dtype == DType::kComplex128; }

bool IsFloating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || IsComplex(dtype);
}

Matrix::Matrix(int64_t rows, int64_t cols, DType dtype)
    : rows_(rows),
      cols_(cols),
      dtype_(dtype),
      storage_(static_cast<size_t>(rows * cols) * ElementSize(dtype)) {
  static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= alignof(std::complex<double>));
  if (!storage_.empty()) std::memset(storage_.data(), 0, storage_.size());
}

Matrix Matrix::ForOverwrite(int64_t rows, int64_t cols, DType dtype) {
  Matrix m;
  m.rows_ = rows;
  m.cols_ = cols;
  m.dtype_ = dtype;
  m.storage_.resize(static_cast<size_t>(rows * cols) * ElementSize(dtype));  // not cleared
  return m;
}

Matrix::Matrix(const Matrix& other)
    : rows_(other.rows_), cols_(other.cols_), dtype_(other.dtype_), storage_(other.storage_) {
  if (other.borrowed()) storage_.assign(other.bytes(), other.bytes() + other.byte_size());
}

Matrix& Matrix::operator=(const Matrix& other) {
  if (this != &other) *this = Matrix(other);
  return *this;
}

Matrix::Matrix(Matrix&& other) noexcept
    : rows_(other.rows_),
      cols_(other.cols_),
      dtype_(other.dtype_),
      storage_(std::move(other.storage_)),
      borrowed_(std::exchange(other.borrowed_, nullptr)) {
  other.rows_ = other.cols_ = 0;
}

Matrix& Matrix::operator=(Matrix&& other) noexcept {
  rows_ = std::exchange(other.rows_, 0);
  cols_ = std::exchange(other.cols_, 0);
  dtype_ = other.dtype_;
  storage_ = std::move(other.storage_);
  borrowed_ = std::exchange(other.borrowed_, nullptr);
  return *this;
}

Matrix Matrix::Borrowing(int64_t rows, int64_t cols, DType dtype, std::byte* bytes) {
  Matrix m;
  m.rows_ = rows;
  m.cols_ = cols;
  m.dtype_ = dtype;
  m.borrowed_ = bytes;
  return m;
}

Matrix Matrix::CopyOf(const MatrixView& view) {
  return FromBytes(view.rows, view.cols, view.dtype, {view.data, view.byte_size()});
}

Matrix Matrix::FromBytes(int64_t rows, int64_t cols, DType dtype,
                         std::span<const std::byte> bytes) {
  Matrix m(rows, cols, dtype);
  if (!bytes.empty()) std::memcpy(m.mutable_bytes(), bytes.data(), m.byte_size());
  return m;
}

}  // namespace matrixd
