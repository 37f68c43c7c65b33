// Force-included (nvcc -include) by scripts/build_peers.sh when it compiles the CUDA samples'
// bandwidthTest.cu, which is left as upstream wrote it. That file reads
// cudaDeviceProp::computeMode, a field CUDA 13 dropped; here the field comes back, read from
// cudaDevAttrComputeMode. Under CUDA 12 this header adds nothing.
#pragma once
#include <cuda_runtime.h>

#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
struct xferbench_device_prop : public cudaDeviceProp {
  int computeMode;
};

static inline cudaError_t xferbench_get_device_properties(xferbench_device_prop *prop, int device) {
  cudaError_t status = cudaGetDeviceProperties(static_cast<cudaDeviceProp *>(prop), device);
  if (status != cudaSuccess) return status;
  return cudaDeviceGetAttribute(&prop->computeMode, cudaDevAttrComputeMode, device);
}

// Every later use in the sample sees the struct that still has the field.
#undef cudaGetDeviceProperties
#define cudaDeviceProp xferbench_device_prop
#define cudaGetDeviceProperties xferbench_get_device_properties
#endif
