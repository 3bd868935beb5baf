// Loads libmatrixd_mp_grid.so (see device_grid_engine.h). RTLD_NOW, so that a missing symbol (an
// NCCL older than cuBLASMp needs, loaded first by the binary) fails here, at start-up, and not in
// the middle of a job.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/distributed/device_grid_engine.h"

namespace matrixd::distributed {
namespace {

#ifdef MATRIXD_MP_GRID_PLUGIN
// The folder of the running binary, with a trailing slash ("" when unknown).
std::string BinaryFolder() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return "";
  const std::string binary(path, static_cast<size_t>(length));
  const size_t slash = binary.rfind('/');
  return slash == std::string::npos ? "" : binary.substr(0, slash + 1);
}

absl::StatusOr<const DeviceGridPlugin*> Load() {
  std::string errors;
  for (const std::string& name :
       {BinaryFolder() + MATRIXD_MP_GRID_PLUGIN, std::string(MATRIXD_MP_GRID_PLUGIN)}) {
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* error = dlerror();
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", error != nullptr ? error : name);
      continue;
    }
    using Entry = const DeviceGridPlugin* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(library, "matrixd_device_grid_plugin"));
    if (entry == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, " has no matrixd_device_grid_plugin()"));
    }
    return entry();  // never unloaded: the engines it makes live as long as the process
  }
  // The usual cause: the binary loaded an NCCL older than cuBLASMp's (its own link, the CUDA
  // toolkit's) before the plugin asked for the newer one.
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot load ", MATRIXD_MP_GRID_PLUGIN, ": ", errors,
      " (cuBLASMp needs NCCL >= 2.29.2 first in LD_LIBRARY_PATH, and the CUDA driver)"));
}
#endif

}  // namespace

absl::StatusOr<const DeviceGridPlugin*> LoadDeviceGridPlugin() {
#ifdef MATRIXD_MP_GRID_PLUGIN
  static const absl::StatusOr<const DeviceGridPlugin*>* const plugin =
      new absl::StatusOr<const DeviceGridPlugin*>(Load());
  return *plugin;
#else
  return absl::UnimplementedError(
      "this build has no cuBLASMp/cuSOLVERMp (the CUDA backend and the NVIDIA wheels in "
      "MATRIXD_PYDEPS_PREFIX were not found when it was configured)");
#endif
}

}  // namespace matrixd::distributed
