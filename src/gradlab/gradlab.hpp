#pragma once
// gradlab: a readable autograd engine whose API mirrors LibTorch. The one header users include.

#include "gradlab/autograd/anomaly.hpp"
#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/function.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/graph.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/device.hpp"
#include "gradlab/core/dtype.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/generator.hpp"
#include "gradlab/core/options.hpp"
#include "gradlab/core/scalar.hpp"
#include "gradlab/core/shape.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/ops/ops.hpp"
