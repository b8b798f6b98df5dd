// A shared library that is not a yoloflow plugin: it exports no descriptor.
extern "C" __attribute__((visibility("default"))) int some_function() { return 42; }
