#pragma once
// The device the train sink trains on, from its `device` parameter (else the run's):
// "auto" = CUDA when LibTorch sees a device, else the CPU; a CUDA device asked for where there
// is none is an error. Auto batch profiles on the same device before the sink exists.
#include <cstdint>
#include <string>

#include <c10/core/Device.h>

namespace yoloflow::core {

c10::Device pick_train_device(const std::string& wanted);

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
