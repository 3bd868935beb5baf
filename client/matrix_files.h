// Reading matrices from NumPy .npy and Matrix Market .mtx files, and writing .npy. Every error
// is INVALID_ARGUMENT (NOT_FOUND / PERMISSION_DENIED... for I/O) and names the file and the
// problem.
#ifndef MATRIXD_CLIENT_MATRIX_FILES_H_
#define MATRIXD_CLIENT_MATRIX_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "matrixd/v1/matrix.pb.h"

namespace matrixd {

// Parses the contents of a .npy file (format version 1.0, 2.0 or 3.0); `name` labels errors.
// Dtypes '<f4' '<f8' '<c8' '<c16' '<i8' '<u4' ('=' and '|' byte orders too) map to FLOAT32,
// FLOAT64, COMPLEX64, COMPLEX128, INT64, UINT32. A 2-D array keeps its shape, a 1-D array of n
// elements becomes an n x 1 column (a right-hand side); Fortran-order data is returned row-major.
// Errors: bad magic, unknown version, malformed header, unsupported dtype (big-endian,
// structured, other types), 0-D or 3+-D shape, data shorter or longer than the shape.
absl::StatusOr<v1::Matrix> ParseNpy(absl::string_view bytes, absl::string_view name);

// The .npy encoding (version 1.0, C order, little-endian) of a matrix.
// INVALID_ARGUMENT if its shape does not match its data.
absl::StatusOr<std::string> SerializeNpy(const v1::Matrix& matrix);

// Parses a Matrix Market file: object "matrix", format coordinate or array, field real (or
// double), integer, complex or pattern, symmetry general, symmetric, skew-symmetric or hermitian.
// integer -> INT64, real and pattern -> FLOAT64, complex -> COMPLEX128. The result is dense;
// symmetric storage is mirrored, duplicate coordinate entries are summed. Errors name the line:
// bad banner, unsupported combination, bad size line, malformed entry, index out of range, an
// entry above the diagonal of a symmetric-storage matrix, too few or too many entries.
absl::StatusOr<v1::Matrix> ParseMatrixMarket(absl::string_view text, absl::string_view name);

// File versions of the above. I/O errors keep their errno-derived code and name the path.
absl::StatusOr<v1::Matrix> ReadNpyFile(const std::string& path);
absl::StatusOr<v1::Matrix> ReadMatrixMarketFile(const std::string& path);
absl::Status WriteNpyFile(const v1::Matrix& matrix, const std::string& path);

// Reads a .npy or .mtx file, chosen by extension (case-insensitive). INVALID_ARGUMENT for any
// other extension.
absl::StatusOr<v1::Matrix> ReadMatrixFile(const std::string& path);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_MATRIX_FILES_H_
