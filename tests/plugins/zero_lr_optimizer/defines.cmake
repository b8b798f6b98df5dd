# An optimizer plugin: it links LibTorch.
set(_torch TORCH)
