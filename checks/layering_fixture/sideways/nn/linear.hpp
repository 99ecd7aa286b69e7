#pragma once
// The target of the planted sideways include (see testing/uses_nn.hpp).
