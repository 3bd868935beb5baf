// The Generate RPC's entries made on the device: the kernel evaluates core/generator_entry.h, the
// same definition the host generator uses, so the bytes equal the host's bit for bit.
#ifndef MATRIXD_CORE_CUDA_GENERATED_ENTRIES_H_
#define MATRIXD_CORE_CUDA_GENERATED_ENTRIES_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "core/generator_entry.h"
#include "core/matrix.h"

namespace matrixd::cuda {

// Writes the local_rows x cols row-major matrix of `dtype` at `data` (device memory): local row r
// holds global row rows.Global(r) of the generated matrix with `cols` columns. Queues one kernel
// on `stream` and returns the launch status; does not synchronise.
cudaError_t LaunchGeneratedEntries(const GeneratorOptions& options, const GeneratedRows& rows,
                                   int64_t local_rows, int64_t cols, DType dtype, void* data,
                                   cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_GENERATED_ENTRIES_H_
