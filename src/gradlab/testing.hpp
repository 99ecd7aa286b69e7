#pragma once
// gradlab's test machinery, on top of the LibTorch-like API of <gradlab/gradlab.hpp>: gradcheck
// and gradgradcheck, the op table (one row per op: input domains, samplers, references) and the
// gradient mutants (backward overrides the checks must catch, with the op-recording internals
// they need). The RapidCheck generators for tensors are <gradlab/testing/rc_generators.hpp>:
// include that one in a test that links `rapidcheck` (gradlab itself does not depend on it).

#include "gradlab/gradlab.hpp"
#include "gradlab/testing/gradcheck.hpp"
#include "gradlab/testing/mutants.hpp"
#include "gradlab/testing/op_table.hpp"
