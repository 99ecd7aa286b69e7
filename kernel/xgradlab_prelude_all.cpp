// Compiled with clang++-19 -femit-all-decls into libxgradlab_prelude.so (kernel/CMakeLists.txt):
// every inline variable and inline function of the prelude gets a definition there, for cells
// that use the precompiled prelude (clang 19's Interpreter emits none of a PCH's inline variables).
#include "xgradlab_prelude.hpp"
