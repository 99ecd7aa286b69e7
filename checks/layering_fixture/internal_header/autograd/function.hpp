#pragma once
// A planted fault for `layering_catches_a_compiler_internal_header`: gradlab's
// autograd/function.hpp once included <cxxabi.h>, which every user of the header then saw.
#include <cxxabi.h>
