// A one-line progress bar for matrixctl's transfers, redrawn in place ("\r"), shown only when the
// output is a terminal and the transfer is large enough to be worth watching.
#ifndef MATRIXD_CLIENT_PROGRESS_BAR_H_
#define MATRIXD_CLIENT_PROGRESS_BAR_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace matrixd {

// Transfers larger than this get a bar.
inline constexpr uint64_t kProgressBarMinBytes = uint64_t{64} << 20;

// "upload [##########          ]  50%  256.00 MiB of 512.00 MiB  1.20 GB/s".
std::string FormatProgressLine(const std::string& label, uint64_t done, uint64_t total,
                               absl::Duration elapsed);

class ProgressBar {
 public:
  // Draws on `out` only when `enabled` (e.g. isatty) and `total` > kProgressBarMinBytes.
  ProgressBar(std::ostream& out, std::string label, uint64_t total, bool enabled);
  // Calls Done().
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Redraws at most every 100 ms, and at the end.
  void Update(uint64_t done, uint64_t total);
  // Ends the bar's line, if one was drawn, so that what follows starts on a line of its own.
  void Done();

 private:
  std::ostream& out_;
  const std::string label_;
  const bool shown_;
  const absl::Time start_ = absl::Now();
  absl::Time last_drawn_ = absl::InfinitePast();
  bool drawn_ = false;
};

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_PROGRESS_BAR_H_
