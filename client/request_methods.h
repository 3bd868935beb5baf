// The method names matrixctl accepts for the determinant and the permanent (and the permanent's
// precision and walk), and their enums.
#ifndef MATRIXD_CLIENT_REQUEST_METHODS_H_
#define MATRIXD_CLIENT_REQUEST_METHODS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "matrixd/v1/matrixd.pb.h"

namespace matrixd {

// "auto", "lu" or "condensation". INVALID_ARGUMENT naming the accepted names otherwise.
absl::StatusOr<v1::DeterminantMethod> ParseDeterminantMethod(absl::string_view name);

// "auto", "ryser" or "glynn". INVALID_ARGUMENT naming the accepted names otherwise.
absl::StatusOr<v1::PermanentMethod> ParsePermanentMethod(absl::string_view name);

// "extended" or "fast" (the permanent's --precision). INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::PermanentPrecision> ParsePermanentPrecision(absl::string_view name);

// "auto", "dense" or "sparse" (the permanent's --walk). INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::PermanentWalk> ParsePermanentWalk(absl::string_view name);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_REQUEST_METHODS_H_
