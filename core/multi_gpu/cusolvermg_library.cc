#include "core/multi_gpu/cusolvermg_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace matrixd::multi_gpu {
namespace {

template <typename Function>
absl::Status Resolve(void* library, const char* name, Function* function) {
  dlerror();
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    const char* error = dlerror();
    return absl::UnavailableError(
        absl::StrCat("libcusolverMg has no ", name, ": ", error != nullptr ? error : "null"));
  }
  *function = reinterpret_cast<Function>(symbol);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CusolverMgLibrary>> CusolverMgLibrary::Load() {
  std::unique_ptr<CusolverMgLibrary> library(new CusolverMgLibrary());
  std::string errors;
  for (const char* name : {"libcusolverMg.so.12", "libcusolverMg.so"}) {
    library->handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library->handle_ != nullptr) break;
    const char* error = dlerror();
    absl::StrAppend(&errors, errors.empty() ? "" : "; ", error != nullptr ? error : name);
  }
  if (library->handle_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot load cusolverMg: ", errors));
  }
  void* h = library->handle_;
  for (absl::Status status :
       {Resolve(h, "cusolverMgCreate", &library->create),
        Resolve(h, "cusolverMgDestroy", &library->destroy),
        Resolve(h, "cusolverMgDeviceSelect", &library->device_select),
        Resolve(h, "cusolverMgCreateDeviceGrid", &library->create_device_grid),
        Resolve(h, "cusolverMgDestroyGrid", &library->destroy_grid),
        Resolve(h, "cusolverMgCreateMatrixDesc", &library->create_matrix_desc),
        Resolve(h, "cusolverMgDestroyMatrixDesc", &library->destroy_matrix_desc),
        Resolve(h, "cusolverMgGetrf_bufferSize", &library->getrf_buffer_size),
        Resolve(h, "cusolverMgGetrf", &library->getrf),
        Resolve(h, "cusolverMgGetrs_bufferSize", &library->getrs_buffer_size),
        Resolve(h, "cusolverMgGetrs", &library->getrs),
        Resolve(h, "cusolverMgPotrf_bufferSize", &library->potrf_buffer_size),
        Resolve(h, "cusolverMgPotrf", &library->potrf),
        Resolve(h, "cusolverMgPotrs_bufferSize", &library->potrs_buffer_size),
        Resolve(h, "cusolverMgPotrs", &library->potrs)}) {
    if (!status.ok()) return status;
  }
  return library;
}

CusolverMgLibrary::~CusolverMgLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace matrixd::multi_gpu
