#include "client/request_methods.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace matrixd {

absl::StatusOr<v1::DeterminantMethod> ParseDeterminantMethod(absl::string_view name) {
  if (name == "auto") return v1::DETERMINANT_METHOD_AUTO;
  if (name == "lu") return v1::DETERMINANT_METHOD_LU;
  if (name == "condensation") return v1::DETERMINANT_METHOD_CONDENSATION;
  return absl::InvalidArgumentError(
      absl::StrCat("--method '", name, "': det takes auto, lu or condensation"));
}

absl::StatusOr<v1::PermanentMethod> ParsePermanentMethod(absl::string_view name) {
  if (name == "auto") return v1::PERMANENT_METHOD_AUTO;
  if (name == "ryser") return v1::PERMANENT_METHOD_RYSER;
  if (name == "glynn") return v1::PERMANENT_METHOD_GLYNN;
  return absl::InvalidArgumentError(
      absl::StrCat("--method '", name, "': permanent takes auto, ryser or glynn"));
}

}  // namespace matrixd
