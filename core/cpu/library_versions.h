// The versions of the libraries the CPU backend computes with, for the provenance of its answers
// (Backend::Versions).
#ifndef MATRIXD_CORE_CPU_LIBRARY_VERSIONS_H_
#define MATRIXD_CORE_CPU_LIBRARY_VERSIONS_H_

#include <string>
#include <utility>
#include <vector>

namespace matrixd::cpu {

// ("openblas", the loaded library's own description, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH
// NO_AFFINITY Haswell MAX_THREADS=64").
std::vector<std::pair<std::string, std::string>> CpuLibraryVersions();

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_LIBRARY_VERSIONS_H_
