// Naming a resident matrix by the start of its handle, as git names commits: matrixctl's
// "@HANDLE" arguments.
#ifndef MATRIXD_CLIENT_HANDLE_PREFIX_H_
#define MATRIXD_CLIENT_HANDLE_PREFIX_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "matrixd/v1/matrixd.pb.h"

namespace matrixd {

// "@PREFIX" -> "PREFIX"; nullopt for an argument that does not start with '@' (a file name).
std::optional<std::string> HandleArgument(absl::string_view argument);

// The one listed matrix whose handle starts with `prefix` (case-insensitive). INVALID_ARGUMENT
// for an empty prefix or one that several handles share (naming them), NOT_FOUND when none does.
absl::StatusOr<v1::ResidentMatrix> ResolveHandlePrefix(absl::string_view prefix,
                                                       const v1::ListMatricesResponse& listed);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_HANDLE_PREFIX_H_
