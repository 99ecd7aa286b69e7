// A planted layering fault for `layering_catches_a_cycle`: the nn <-> io include cycle that
// gradlab once had (nn/module.cpp included io/module_state.hpp, which includes nn/module.hpp).
#include "gradlab/nn/module.hpp"
#include "gradlab/io/module_state.hpp"
