#pragma once
// The machinery header of the planted fault.
