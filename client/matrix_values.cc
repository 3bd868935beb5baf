#include "client/matrix_values.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"

namespace matrixd {
namespace {

template <typename T>
constexpr bool kIsComplexType =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

template <typename T>
std::vector<std::complex<double>> Widen(const std::vector<T>& values) {
  std::vector<std::complex<double>> out;
  out.reserve(values.size());
  for (const T& v : values) {
    if constexpr (std::is_same_v<T, std::complex<float>>) {
      out.emplace_back(v.real(), v.imag());
    } else if constexpr (std::is_same_v<T, std::complex<double>>) {
      out.push_back(v);
    } else {
      out.emplace_back(static_cast<double>(v), 0.0);
    }
  }
  return out;
}

template <typename T>
absl::StatusOr<std::vector<std::complex<double>>> ReadWidened(const v1::Matrix& matrix) {
  absl::StatusOr<std::vector<T>> values = ReadMatrix<T>(matrix);
  if (!values.ok()) return values.status();
  return Widen(*values);
}

absl::Status ElementError(int64_t index, int64_t cols, std::complex<double> v, v1::DType dtype,
                          absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("element (", index / cols, ", ", index % cols,
                                                 ") = ", v.real(), v.imag() != 0 ? " + " : "",
                                                 v.imag() != 0 ? absl::StrCat(v.imag(), "i") : "",
                                                 " cannot be ", DTypeFlagName(dtype), ": ", why));
}

// Narrows one element to T, or explains why it does not fit.
template <typename T>
absl::StatusOr<T> Narrow(std::complex<double> v, int64_t index, int64_t cols) {
  constexpr v1::DType kDType = std::is_same_v<T, float>                  ? v1::DTYPE_FLOAT32
                               : std::is_same_v<T, double>               ? v1::DTYPE_FLOAT64
                               : std::is_same_v<T, std::complex<float>>  ? v1::DTYPE_COMPLEX64
                               : std::is_same_v<T, std::complex<double>> ? v1::DTYPE_COMPLEX128
                               : std::is_same_v<T, int64_t>              ? v1::DTYPE_INT64
                                                                         : v1::DTYPE_UINT32;
  if constexpr (std::is_same_v<T, std::complex<double>>) {
    return v;
  } else {
    if constexpr (!kIsComplexType<T>) {
      if (v.imag() != 0) return ElementError(index, cols, v, kDType, "imaginary part is not zero");
    }
    if constexpr (std::is_same_v<T, double>) {
      return v.real();
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>) {
      constexpr double kMax = std::numeric_limits<float>::max();
      auto overflows = [](double x) { return std::isfinite(x) && std::fabs(x) > kMax; };
      if (overflows(v.real()) || overflows(v.imag())) {
        return ElementError(index, cols, v, kDType, "out of float32 range");
      }
      if constexpr (std::is_same_v<T, float>) {
        return static_cast<float>(v.real());
      } else {
        return std::complex<float>(static_cast<float>(v.real()), static_cast<float>(v.imag()));
      }
    } else {
      const double x = v.real();
      if (x != std::floor(x)) return ElementError(index, cols, v, kDType, "not an integer");
      // 2^63 and 2^32 are exact doubles; compare against them, not against the integer limits.
      constexpr double kLow = std::is_same_v<T, int64_t> ? -9223372036854775808.0 : 0.0;
      constexpr double kHigh = std::is_same_v<T, int64_t> ? 9223372036854775808.0 : 4294967296.0;
      if (!(x >= kLow && x < kHigh)) return ElementError(index, cols, v, kDType, "out of range");
      return static_cast<T>(x);
    }
  }
}

template <typename T>
absl::StatusOr<v1::Matrix> NarrowAll(int64_t rows, int64_t cols,
                                     const std::vector<std::complex<double>>& values) {
  std::vector<T> out;
  out.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StatusOr<T> v = Narrow<T>(values[i], static_cast<int64_t>(i), cols);
    if (!v.ok()) return v.status();
    out.push_back(*v);
  }
  return MakeMatrix<T>(rows, cols, out);
}

}  // namespace

int64_t ElementSize(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
    case v1::DTYPE_UINT32:
      return 4;
    case v1::DTYPE_FLOAT64:
    case v1::DTYPE_COMPLEX64:
    case v1::DTYPE_INT64:
      return 8;
    case v1::DTYPE_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

bool IsComplex(v1::DType dtype) { return dtype == v1::DTYPE_COMPLEX64 || dtype == v1::DTYPE_COMPLEX128; }

absl::string_view DTypeFlagName(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return "float32";
    case v1::DTYPE_FLOAT64:
      return "float64";
    case v1::DTYPE_COMPLEX64:
      return "complex64";
    case v1::DTYPE_COMPLEX128:
      return "complex128";
    case v1::DTYPE_INT64:
      return "int64";
    case v1::DTYPE_UINT32:
      return "uint32";
    default:
      return "unspecified";
  }
}

absl::StatusOr<v1::DType> ParseDType(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (v1::DType dtype :
       {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64, v1::DTYPE_COMPLEX64, v1::DTYPE_COMPLEX128, v1::DTYPE_INT64, v1::DTYPE_UINT32}) {
    if (lower == DTypeFlagName(dtype) || lower == absl::AsciiStrToLower(v1::DType_Name(dtype))) {
      return dtype;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name,
                   "', want one of float64, float32, complex128, complex64, int64, uint32"));
}

absl::Status CheckMatrixShape(const v1::Matrix& matrix) {
  const int64_t size = ElementSize(matrix.dtype());
  if (size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has no known dtype (", v1::DType_Name(matrix.dtype()), ")"));
  }
  const int64_t rows = matrix.rows();
  const int64_t cols = matrix.cols();
  if (rows < 0 || cols < 0 ||
      (rows > 0 && cols > std::numeric_limits<int64_t>::max() / size / rows)) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has an invalid shape ", rows, " x ", cols));
  }
  if (static_cast<int64_t>(matrix.data().size()) != rows * cols * size) {
    return absl::InvalidArgumentError(absl::StrCat("matrix.data has ", matrix.data().size(),
                                                   " bytes, want ", rows, "*", cols, "*", size,
                                                   " = ", rows * cols * size));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::complex<double>>> ToComplex128Values(const v1::Matrix& matrix) {
  switch (matrix.dtype()) {
    case v1::DTYPE_FLOAT32:
      return ReadWidened<float>(matrix);
    case v1::DTYPE_FLOAT64:
      return ReadWidened<double>(matrix);
    case v1::DTYPE_COMPLEX64:
      return ReadWidened<std::complex<float>>(matrix);
    case v1::DTYPE_COMPLEX128:
      return ReadMatrix<std::complex<double>>(matrix);
    case v1::DTYPE_INT64:
      return ReadWidened<int64_t>(matrix);
    case v1::DTYPE_UINT32:
      return ReadWidened<uint32_t>(matrix);
    default:
      return CheckMatrixShape(matrix);  // names the unknown dtype
  }
}

absl::StatusOr<v1::Matrix> FromComplex128Values(int64_t rows, int64_t cols, v1::DType dtype,
                                                const std::vector<std::complex<double>>& values) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return NarrowAll<float>(rows, cols, values);
    case v1::DTYPE_FLOAT64:
      return NarrowAll<double>(rows, cols, values);
    case v1::DTYPE_COMPLEX64:
      return NarrowAll<std::complex<float>>(rows, cols, values);
    case v1::DTYPE_COMPLEX128:
      return NarrowAll<std::complex<double>>(rows, cols, values);
    case v1::DTYPE_INT64:
      return NarrowAll<int64_t>(rows, cols, values);
    case v1::DTYPE_UINT32:
      return NarrowAll<uint32_t>(rows, cols, values);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot convert to dtype ", v1::DType_Name(dtype)));
  }
}

absl::StatusOr<v1::Matrix> ConvertMatrix(const v1::Matrix& matrix, v1::DType dtype) {
  if (absl::Status status = CheckMatrixShape(matrix); !status.ok()) return status;
  if (matrix.dtype() == dtype) return matrix;
  absl::StatusOr<std::vector<std::complex<double>>> values = ToComplex128Values(matrix);
  if (!values.ok()) return values.status();
  return FromComplex128Values(matrix.rows(), matrix.cols(), dtype, *values);
}

}  // namespace matrixd
