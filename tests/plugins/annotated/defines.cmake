# Its loss uses tensors: the library links LibTorch.
set(_torch TORCH)
