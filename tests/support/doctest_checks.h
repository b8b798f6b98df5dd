#pragma once
// LibTorch built with glog (Debian's 1.13) defines CHECK as glog's when <torch/torch.h> comes
// after doctest: a failed check then aborts the test binary with no doctest report, its
// INFO and CAPTURE lost. Included after the LibTorch headers, CHECK is doctest's again.
#include <doctest/doctest.h>

#ifdef CHECK
#undef CHECK
#endif
#define CHECK DOCTEST_CHECK
