// Element types of a v1::Matrix: sizes, names, and conversions between dtypes, for the client
// side (file formats, generators, matrixctl's checks). No server or core types.
#ifndef MATRIXD_CLIENT_MATRIX_VALUES_H_
#define MATRIXD_CLIENT_MATRIX_VALUES_H_

#include <complex>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "matrixd/v1/matrix.pb.h"

namespace matrixd {

// Bytes per element of `dtype`; 0 for DTYPE_UNSPECIFIED or a value outside the enum.
int64_t ElementSize(v1::DType dtype);

// True for COMPLEX64 and COMPLEX128.
bool IsComplex(v1::DType dtype);

// The lower-case name matrixctl uses: "float32", "float64", "complex64", "complex128", "int64",
// "uint32"; "unspecified" otherwise.
absl::string_view DTypeFlagName(v1::DType dtype);

// Parses a name as DTypeFlagName writes it (or the enum name, any case). INVALID_ARGUMENT
// listing the accepted names otherwise.
absl::StatusOr<v1::DType> ParseDType(absl::string_view name);

// OK when the shape is non-negative, the dtype known, and data holds exactly rows * cols
// elements; INVALID_ARGUMENT naming the mismatch otherwise.
absl::Status CheckMatrixShape(const v1::Matrix& matrix);

// Every element, row-major, widened to complex<double> (exact except INT64 beyond 2^53).
absl::StatusOr<std::vector<std::complex<double>>> ToComplex128Values(const v1::Matrix& matrix);

// Builds a matrix of dtype `dtype` from complex<double> values, narrowing each element.
// INVALID_ARGUMENT when an element does not fit: a non-zero imaginary part for a real dtype, a
// non-integer or out-of-range value for INT64/UINT32, a finite value that overflows FLOAT32.
// REQUIRES: values.size() == rows * cols.
absl::StatusOr<v1::Matrix> FromComplex128Values(int64_t rows, int64_t cols, v1::DType dtype,
                                                const std::vector<std::complex<double>>& values);

// Converts `matrix` to `dtype` element by element, with FromComplex128Values's errors. The same
// dtype returns an exact copy (INT64 values are not rounded through double).
absl::StatusOr<v1::Matrix> ConvertMatrix(const v1::Matrix& matrix, v1::DType dtype);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_MATRIX_VALUES_H_
