// What xgradlab includes before the first cell; the build precompiles it (xgradlab_prelude.pch,
// see CMakeLists.txt) so that the kernel starts in well under a second.
#ifndef XGRADLAB_PRELUDE_HPP
#define XGRADLAB_PRELUDE_HPP
#include <gradlab/display/display.hpp>
#include <gradlab/gradlab.hpp>
#include <gradlab/testing.hpp>

#include <iostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>
#endif
