# ---- the fused CPU optimizer update at each forced capability level (GRADLAB_CPU_CAPABILITY) -----
# checks/optim/fused_step_prop.cpp once per level: the fused SGD / Adam / AdamW update equals the
# composite bit for bit at that level, at 1 and 2 threads.
gradlab_capability_tests(optim prop_optim "FusedStep.*" property 300)
