// A slice [begin, end] of a job's progress, so that a sub-computation (one prime of a multimodular
// determinant, the floating-point part before it) reports its own fraction done and checks for
// cancellation without knowing where it sits in the whole job.
#ifndef MATRIXD_CORE_CPU_PROGRESS_RANGE_H_
#define MATRIXD_CORE_CPU_PROGRESS_RANGE_H_

#include <algorithm>
#include <cstdint>

#include "core/job_control.h"

namespace matrixd::cpu {

class ProgressRange {
 public:
  // The whole job. `control` may be null.
  explicit ProgressRange(JobControl* control) : ProgressRange(control, 0.0, 1.0) {}

  bool cancelled() const { return IsCancelled(control_); }
  // Reports `fraction` (clamped to [0, 1]) of this slice as done.
  void Report(double fraction) const {
    ReportProgress(control_, begin_ + (end_ - begin_) * std::clamp(fraction, 0.0, 1.0));
  }
  // The part [from, to] of this slice, as fractions of it.
  ProgressRange Part(double from, double to) const {
    return ProgressRange(control_, begin_ + (end_ - begin_) * from, begin_ + (end_ - begin_) * to);
  }

 private:
  ProgressRange(JobControl* control, double begin, double end)
      : control_(control), begin_(begin), end_(end) {}

  JobControl* control_;
  double begin_;
  double end_;
};

// Work left in an elimination of order n once `rest` rows and columns remain, as a fraction of the
// whole: (rest / n)^3.
inline double EliminationWorkLeft(int64_t rest, int64_t n) {
  const double left = static_cast<double>(rest) / static_cast<double>(n);
  return left * left * left;
}

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_PROGRESS_RANGE_H_
