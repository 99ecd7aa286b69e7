#pragma once
// gradlab::optim: optimizers and learning-rate schedulers.

#include "gradlab/optim/adagrad.hpp"
#include "gradlab/optim/adam.hpp"
#include "gradlab/optim/lbfgs.hpp"
#include "gradlab/optim/optimizer.hpp"
#include "gradlab/optim/rmsprop.hpp"
#include "gradlab/optim/schedulers.hpp"
#include "gradlab/optim/sgd.hpp"
