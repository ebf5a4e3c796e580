# Mixed precision with float16 autocast and a static loss scale of 512, the
# setting of mmdet3d 0.x configs (``fp16 = dict(loss_scale=512.)``).
#
# Use on NVIDIA GPUs without bfloat16 support (before Ampere, e.g. V100,
# T4) to reproduce 0.x fp16 results; it needs a CUDA GPU. Prefer
# 'fp16_dynamic' when a loss overflows (NaN/inf) with the static scale, and
# 'bf16' on Ampere or newer GPUs and on CPU.
#
# Compose it from a config with ``presets = ['fp16']`` (optionally with one
# 'grad_accum_x*' preset), or pass ``--amp fp16-static`` to tools/train.py.
optim_wrapper = dict(type='AmpOptimWrapper', dtype='float16', loss_scale=512.)
