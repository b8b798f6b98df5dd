#pragma once
// A TCP port on the loopback interface that is free now, for tests that start rendezvous
// stores (data-parallel ranks). Another process may take it before the test binds it; the
// window is short enough for tests.
namespace yoloflow::test {

int free_port();

}  // namespace yoloflow::test
