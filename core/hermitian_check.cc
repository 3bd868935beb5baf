#include "core/hermitian_check.h"

#include <algorithm>
#include <complex>
#include <limits>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace matrixd {
namespace {

template <typename T>
struct RealOf {
  using type = T;
};
template <typename R>
struct RealOf<std::complex<R>> {
  using type = R;
};

template <typename T>
std::string Format(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return absl::StrFormat("%.17g", static_cast<double>(value));
  } else {
    return absl::StrFormat("(%.17g, %.17g)", static_cast<double>(value.real()),
                           static_cast<double>(value.imag()));
  }
}

template <typename T>
T Conjugate(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return value;
  } else {
    return std::conj(value);
  }
}

template <typename T>
absl::Status Check(const MatrixView& a, int64_t batch_count, absl::string_view field) {
  const auto values = a.As<T>();
  const int64_t count = std::max<int64_t>(batch_count, 1);
  const int64_t n = a.cols;
  for (int64_t k = 0; k < count; ++k) {
    const T* m = values.data() + k * n * n;
    double largest = 0.0;
    for (int64_t i = 0; i < n * n; ++i) largest = std::max(largest, double{std::abs(m[i])});
    const double tolerance = HermitianTolerance<T>(largest);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i; j < n; ++j) {
        const T upper = m[i * n + j];
        const T lower = m[j * n + i];
        if (double{std::abs(upper - Conjugate(lower))} <= tolerance) continue;
        return HermitianMismatchError(field, batch_count, k, i, j, upper, lower);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

template <typename T>
double HermitianTolerance(double largest) {
  return 16.0 * std::numeric_limits<typename RealOf<T>::type>::epsilon() * largest;
}

template <typename T>
absl::Status HermitianMismatchError(absl::string_view field, int64_t batch_count, int64_t k,
                                    int64_t i, int64_t j, T upper, T lower) {
  const std::string where =
      batch_count > 0 ? absl::StrCat(field, " (matrix ", k, " of the batch)") : std::string(field);
  if (i == j) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " is not Hermitian: its diagonal entry [", i, "][", i, "] = ", Format(upper),
        " is not real; Cholesky needs a Hermitian positive definite matrix"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      where, " is not ", std::is_floating_point_v<T> ? "symmetric" : "Hermitian", ": [", i, "][", j,
      "] = ", Format(upper), " but [", j, "][", i, "] = ", Format(lower), "; Cholesky needs a ",
      std::is_floating_point_v<T> ? "symmetric" : "Hermitian", " positive definite matrix"));
}

template double HermitianTolerance<float>(double);
template double HermitianTolerance<double>(double);
template double HermitianTolerance<std::complex<float>>(double);
template double HermitianTolerance<std::complex<double>>(double);
template absl::Status HermitianMismatchError<float>(absl::string_view, int64_t, int64_t, int64_t,
                                                    int64_t, float, float);
template absl::Status HermitianMismatchError<double>(absl::string_view, int64_t, int64_t, int64_t,
                                                     int64_t, double, double);
template absl::Status HermitianMismatchError<std::complex<float>>(absl::string_view, int64_t,
                                                                  int64_t, int64_t, int64_t,
                                                                  std::complex<float>,
                                                                  std::complex<float>);
template absl::Status HermitianMismatchError<std::complex<double>>(absl::string_view, int64_t,
                                                                   int64_t, int64_t, int64_t,
                                                                   std::complex<double>,
                                                                   std::complex<double>);

absl::Status RequireHermitian(const MatrixView& a, int64_t batch_count, absl::string_view field) {
  switch (a.dtype) {
    case DType::kFloat32:
      return Check<float>(a, batch_count, field);
    case DType::kFloat64:
      return Check<double>(a, batch_count, field);
    case DType::kComplex64:
      return Check<std::complex<float>>(a, batch_count, field);
    case DType::kComplex128:
      return Check<std::complex<double>>(a, batch_count, field);
    case DType::kInt64:
    case DType::kUInt32:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ".dtype is ", DTypeName(a.dtype), "; want a floating-point type"));
}

}  // namespace matrixd
