#pragma once
// How LibTorch runs on the train sink's device (training/device/device_choice.h picks the device).
#include <cstdint>
#include <string>

#include <c10/core/Device.h>

namespace yoloflow::core {

// Threads of LibTorch's CPU operations in this process: `cpu_threads` when above 0, else 1
// beside a CUDA device (the step only launches GPU work, and idle OpenMP threads spinning
// beside the graph workers slowed a CUDA step 3x: yolo11n batch 32 with 32 workers on a
// 2-GPU H200 machine, 92 against 305 img/s per GPU, scripts/device-ddp.sh)
// and LibTorch's default on the CPU. Before any worker thread runs a parallel LibTorch
// operation: each thread takes the count on its first one.
void set_training_threads(const c10::Device& device, std::int64_t cpu_threads);

// CUDA only: cuDNN picks the fastest kernels per shape by benchmarking (shapes stay fixed
// within an epoch); TF32 tensor-core convolutions where fp32 runs.
void set_cuda_kernels(const c10::Device& device, bool cudnn_benchmark, bool tf32);

}  // namespace yoloflow::core
