# A loss plugin: it links LibTorch.
set(_torch TORCH)
