# Finds the libraries the project builds on. libtorch comes from the `torch` Python package:
# pass -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')".

# Torch picks the CUDA architectures from TORCH_CUDA_ARCH_LIST. Without a GPU to detect, keep
# the build to the chips this project targets (Ampere, Hopper) so compile time stays small.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT DEFINED TORCH_CUDA_ARCH_LIST)
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0" CACHE STRING "CUDA architectures for torch's flags")
endif()

find_package(Torch REQUIRED)
find_package(CUDAToolkit REQUIRED)
find_package(Threads REQUIRED)

# NVTX3 is header-only and ships with the toolkit.
find_path(MTC_NVTX3_INCLUDE_DIR nvtx3/nvtx3.hpp HINTS ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)

if(MTC_BUILD_BENCH OR MTC_BUILD_TESTS)
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(fmt 9 REQUIRED)
endif()
if(MTC_BUILD_BENCH)
  find_package(CLI11 2.1 REQUIRED)
endif()
if(MTC_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(MTC_BUILD_MICROBENCH)
  find_package(benchmark REQUIRED)
endif()
