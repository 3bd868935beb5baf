// Seeded uniform [-1, 1) doubles for the server tests' matrices.
#ifndef MATRIXD_TESTS_SERVER_RANDOM_VALUES_H_
#define MATRIXD_TESTS_SERVER_RANDOM_VALUES_H_

#include <cstdint>
#include <random>
#include <vector>

namespace matrixd::server::testing {

inline std::vector<double> RandomValues(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = uniform(rng);
  return values;
}

}  // namespace matrixd::server::testing

#endif  // MATRIXD_TESTS_SERVER_RANDOM_VALUES_H_
