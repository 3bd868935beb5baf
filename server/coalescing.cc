#include "server/coalescing.h"

#include "absl/strings/str_cat.h"

namespace matrixd::server {

absl::Status ValidateCoalesceOptions(const CoalesceOptions& options) {
  if (options.max_group < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("coalesce max_group is ", options.max_group, "; want >= 1 (1: off)"));
  }
  if (options.max_order < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("coalesce max_order is ", options.max_order, "; want >= 1"));
  }
  if (options.window < absl::ZeroDuration() || options.window > absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "coalesce window is ", absl::FormatDuration(options.window), "; want between 0 and 1s"));
  }
  return absl::OkStatus();
}

}  // namespace matrixd::server
