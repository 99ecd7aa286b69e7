#pragma once
// Part of the planted nn <-> io cycle (see module.cpp).
