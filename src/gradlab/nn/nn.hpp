#pragma once
// gradlab::nn: modules, layers, losses, initialization, clipping and diagnostics.

#include "gradlab/nn/activation.hpp"
#include "gradlab/nn/conv.hpp"
#include "gradlab/nn/diagnostics.hpp"
#include "gradlab/nn/dropout.hpp"
#include "gradlab/nn/embedding.hpp"
#include "gradlab/nn/functional.hpp"
#include "gradlab/nn/init.hpp"
#include "gradlab/nn/linear.hpp"
#include "gradlab/nn/loss.hpp"
#include "gradlab/nn/module.hpp"
#include "gradlab/nn/normalization.hpp"
#include "gradlab/nn/pooling.hpp"
#include "gradlab/nn/rnn.hpp"
#include "gradlab/nn/sequential.hpp"
#include "gradlab/nn/utils.hpp"
#include "gradlab/ops/nn_ops.hpp"
