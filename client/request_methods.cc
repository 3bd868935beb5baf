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

absl::StatusOr<v1::PermanentPrecision> ParsePermanentPrecision(absl::string_view name) {
  if (name == "extended") return v1::PERMANENT_PRECISION_EXTENDED;
  if (name == "fast") return v1::PERMANENT_PRECISION_FAST;
  return absl::InvalidArgumentError(
      absl::StrCat("--precision '", name, "': permanent takes extended or fast"));
}

absl::StatusOr<v1::PermanentWalk> ParsePermanentWalk(absl::string_view name) {
  if (name == "auto") return v1::PERMANENT_WALK_AUTO;
  if (name == "dense") return v1::PERMANENT_WALK_DENSE;
  if (name == "sparse") return v1::PERMANENT_WALK_SPARSE;
  return absl::InvalidArgumentError(
      absl::StrCat("--walk '", name, "': permanent takes auto, dense or sparse"));
}

}  // namespace matrixd
