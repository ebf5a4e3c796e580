# Mixed precision with float16 autocast and a dynamic loss scale: the scale
# starts high and halves whenever gradients overflow (torch GradScaler).
# This is what mmdet3d's ``tools/train.py --amp`` turns on.
#
# Use on NVIDIA GPUs without bfloat16 support (before Ampere, e.g. V100,
# T4) for speed and memory; it needs a CUDA GPU. On Ampere or newer GPUs
# and on CPU, prefer 'bf16'.
#
# Compose it from a config with ``presets = ['fp16_dynamic']`` (optionally
# with one 'grad_accum_x*' preset), or pass ``--amp`` / ``--amp fp16`` to
# tools/train.py.
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='float16', loss_scale='dynamic')
