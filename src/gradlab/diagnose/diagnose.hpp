#pragma once
// gradlab::diagnose: data, model and training checks, and the doctor report that runs them in
// that order. Works on a user's own model and data:
//
//   diagnose::Report r = diagnose::doctor(net, nn::CrossEntropyLoss(), opt, {x_train, y_train});
//   std::cout << r;   // or r.json()

#include "gradlab/diagnose/charts.hpp"
#include "gradlab/diagnose/data_checks.hpp"
#include "gradlab/diagnose/doctor.hpp"
#include "gradlab/diagnose/finding.hpp"
#include "gradlab/diagnose/model.hpp"
#include "gradlab/diagnose/model_checks.hpp"
#include "gradlab/diagnose/training_checks.hpp"
