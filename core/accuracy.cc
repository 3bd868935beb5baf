#include "core/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace matrixd {

Accuracy FactorizationAccuracy(double rcond, int64_t n, double roundoff) {
  Accuracy accuracy;
  accuracy.rcond = rcond;
  const double working_digits = -std::log10(roundoff);
  const double first_order = rcond > 0.0 ? static_cast<double>(n) * roundoff / rcond
                                         : std::numeric_limits<double>::infinity();
  accuracy.relative_error_bound = first_order < 1.0 ? first_order / (1.0 - first_order)
                                                    : std::numeric_limits<double>::infinity();
  accuracy.meaningful_digits =
      std::clamp(-std::log10(accuracy.relative_error_bound), 0.0, working_digits);
  accuracy.ill_conditioned = accuracy.meaningful_digits < working_digits / 2.0;
  return accuracy;
}

Accuracy DeterminantAccuracy(double rcond, int64_t n, double roundoff) {
  return FactorizationAccuracy(rcond, n, roundoff);
}

Accuracy ExactlyRoundedAccuracy(double rcond) {
  Accuracy accuracy = FactorizationAccuracy(1.0, 1);
  accuracy.rcond = rcond;
  accuracy.relative_error_bound = kDoubleRoundoff;
  accuracy.meaningful_digits = -std::log10(kDoubleRoundoff);
  return accuracy;
}

}  // namespace matrixd
