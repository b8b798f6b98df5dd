# One library per way a descriptor can be broken (bad_descriptor.cpp says what each one does).
set(_variants data_symbol tiny_pointer heap_pointer stack_pointer past_end null_torch null_name null_version
  foreign_name register_outside_code)
