#include "client/handle_prefix.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace matrixd {

std::optional<std::string> HandleArgument(absl::string_view argument) {
  if (!absl::StartsWith(argument, "@")) return std::nullopt;
  return std::string(argument.substr(1));
}

absl::StatusOr<v1::ResidentMatrix> ResolveHandlePrefix(absl::string_view prefix,
                                                       const v1::ListMatricesResponse& listed) {
  if (prefix.empty()) return absl::InvalidArgumentError("empty handle after '@'");
  const std::string lower = absl::AsciiStrToLower(prefix);
  std::vector<const v1::ResidentMatrix*> matches;
  for (const v1::ResidentMatrix& matrix : listed.matrices()) {
    if (absl::StartsWith(absl::AsciiStrToLower(matrix.handle()), lower)) {
      matches.push_back(&matrix);
    }
  }
  if (matches.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no resident matrix has a handle starting with '", prefix, "'"));
  }
  if (matches.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "handle prefix '", prefix, "' is ambiguous: ", matches.size(), " matrices match (",
        absl::StrJoin(matches, ", ",
                      [](std::string* out, const v1::ResidentMatrix* m) {
                        absl::StrAppend(out, m->handle());
                      }),
        ")"));
  }
  return *matches.front();
}

}  // namespace matrixd
