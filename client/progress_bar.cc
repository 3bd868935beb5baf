#include "client/progress_bar.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/result_format.h"

namespace matrixd {
namespace {

constexpr int kBarWidth = 20;

}  // namespace

std::string FormatProgressLine(const std::string& label, uint64_t done, uint64_t total,
                               absl::Duration elapsed) {
  const double fraction =
      total == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  const int filled = static_cast<int>(fraction * kBarWidth);
  const double seconds = absl::ToDoubleSeconds(elapsed);
  const std::string rate =
      seconds > 0 ? absl::StrFormat("  %.2f GB/s", static_cast<double>(done) / seconds / 1e9) : "";
  return absl::StrCat(label, " [", std::string(filled, '#'), std::string(kBarWidth - filled, ' '),
                      "] ", absl::StrFormat("%3d%%", static_cast<int>(fraction * 100)), "  ",
                      FormatBytes(done), " of ", FormatBytes(total), rate);
}

ProgressBar::ProgressBar(std::ostream& out, std::string label, uint64_t total, bool enabled)
    : out_(out), label_(std::move(label)), shown_(enabled && total > kProgressBarMinBytes) {}

ProgressBar::~ProgressBar() { Done(); }

void ProgressBar::Done() {
  if (drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

void ProgressBar::Update(uint64_t done, uint64_t total) {
  if (!shown_) return;
  const absl::Time now = absl::Now();
  if (done < total && now - last_drawn_ < absl::Milliseconds(100)) return;
  last_drawn_ = now;
  drawn_ = true;
  // "\033[K" clears what a longer previous line left.
  out_ << "\r" << FormatProgressLine(label_, done, total, now - start_) << "\033[K" << std::flush;
}

}  // namespace matrixd
