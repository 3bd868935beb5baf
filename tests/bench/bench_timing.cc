#include "tests/bench/bench_timing.h"

#include <algorithm>
#include <vector>

namespace matrixd::bench {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace matrixd::bench
