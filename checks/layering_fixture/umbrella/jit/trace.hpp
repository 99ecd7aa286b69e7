#pragma once
// Planted: a public header that includes machinery (what jit/trace.hpp once did).

#include "gradlab/ops/trace_hook.hpp"
