#pragma once
// Planted: the umbrella header reaches the tracer's hook through jit/trace.hpp.

#include "gradlab/jit/trace.hpp"
