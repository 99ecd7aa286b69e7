#pragma once
// gradlab::data: datasets, transforms, samplers and the DataLoader; LibTorch's torch::data API
// (CRTP datasets, MNIST, transforms::Normalize / Stack, samplers::, make_data_loader) beside them.

#include "gradlab/data/csv.hpp"
#include "gradlab/data/dataloader.hpp"
#include "gradlab/data/dataset.hpp"
#include "gradlab/data/digits.hpp"
#include "gradlab/data/mnist.hpp"
#include "gradlab/data/sampler.hpp"
#include "gradlab/data/torch_data.hpp"
#include "gradlab/data/torch_loader.hpp"
#include "gradlab/data/torch_samplers.hpp"
#include "gradlab/data/transforms.hpp"
