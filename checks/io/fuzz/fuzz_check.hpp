#pragma once
// The fuzz targets' assertion: a broken invariant traps, so libFuzzer saves the input as a crash.

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)
