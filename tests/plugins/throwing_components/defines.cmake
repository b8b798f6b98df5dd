# Model, loss, optimizer and precision plugins: it links LibTorch.
set(_torch TORCH)
