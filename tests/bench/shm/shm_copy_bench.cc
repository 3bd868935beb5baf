// The copy behind issue 9's "system shared memory -> device" target, as the server makes it: a
// POSIX shared-memory object mapped read-write and page-locked in place with
// cudaHostRegister(cudaHostRegisterPortable) (server/shared_memory_registry.cc through
// core/cuda/host_registration.h's PortableHostPin), then copied to device memory with
// cudaMemcpyAsync; next to the same bytes from cudaMallocHost memory (pinned) and from malloc
// (pageable). Prints a markdown table; every row from this run.
//
//   matrixd_shm_copy_bench [--gib=4] [--repeats=5]
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"

ABSL_FLAG(double, gib, 4.0, "GiB to copy");
ABSL_FLAG(int, repeats, 5, "timed copies after one untimed one; the median is printed");

namespace {

bool Check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
  return false;
}

// Median seconds of `repeats` host-to-device copies of `bytes` from `host` (one warm-up first).
double MedianCopySeconds(const void* host, void* device, size_t bytes, int repeats,
                         cudaStream_t stream) {
  std::vector<double> seconds;
  for (int i = 0; i <= repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (!Check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream), "copy") ||
        !Check(cudaStreamSynchronize(stream), "sync")) {
      return -1.0;
    }
    if (i > 0) {
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

void Row(const char* what, double seconds, size_t bytes) {
  if (seconds < 0) {
    std::printf("| %s | failed | |\n", what);
    return;
  }
  std::printf("| %s | %.4f | %.1f |\n", what, seconds, static_cast<double>(bytes) / seconds / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const size_t bytes = static_cast<size_t>(absl::GetFlag(FLAGS_gib) * (1 << 30));
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  cudaDeviceProp properties{};
  if (!Check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties")) return 1;
  void* device = nullptr;
  cudaStream_t stream = nullptr;
  if (!Check(cudaMalloc(&device, bytes), "cudaMalloc") ||
      !Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream")) {
    return 1;
  }
  std::printf("## Host to device, %.2f GiB, %s, median of %d\n\n", bytes / double(1 << 30),
              properties.name, repeats);
  std::printf("| source | seconds | GB/s |\n| --- | --- | --- |\n");

  // The shared-memory object, written by "the client" (every page touched), then registered.
  const std::string name = "/matrixd_copy_bench_" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    std::perror("shm_open/ftruncate");
    return 1;
  }
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  shm_unlink(name.c_str());
  if (shared == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  std::memset(shared, 1, bytes);
  const auto registering = std::chrono::steady_clock::now();
  if (!Check(cudaHostRegister(shared, bytes, cudaHostRegisterPortable), "cudaHostRegister")) {
    return 1;
  }
  const double register_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - registering).count();
  Row("POSIX shared memory, page-locked in place (the server's path)",
      MedianCopySeconds(shared, device, bytes, repeats, stream), bytes);
  Check(cudaHostUnregister(shared), "cudaHostUnregister");
  munmap(shared, bytes);

  void* pinned = nullptr;
  if (Check(cudaMallocHost(&pinned, bytes), "cudaMallocHost")) {
    std::memset(pinned, 1, bytes);
    Row("cudaMallocHost (pinned)", MedianCopySeconds(pinned, device, bytes, repeats, stream),
        bytes);
    cudaFreeHost(pinned);
  }
  void* pageable = std::malloc(bytes);
  if (pageable != nullptr) {
    std::memset(pageable, 1, bytes);
    Row("malloc (pageable)", MedianCopySeconds(pageable, device, bytes, repeats, stream), bytes);
    std::free(pageable);
  }
  std::printf("\nregistration of the shared-memory range (once per region): %.3f s\n",
              register_seconds);
  cudaFree(device);
  cudaStreamDestroy(stream);
  return 0;
}
