# Mixed precision with bfloat16 autocast. bfloat16 has float32's exponent
# range, so no loss scaling is needed and losses do not overflow.
#
# Use on Ampere or newer NVIDIA GPUs (A100, RTX 30xx, H100) and on CPU;
# ``BF16AmpOptimWrapper`` is mmengine's AmpOptimWrapper made to run on both
# (mmengine's own wrapper refuses to start without a GPU). On CPU, spconv's
# sparse convolutions have no bfloat16 kernels: they run in float32 when fed
# float32 voxel features (HardSimpleVFE, as in mmdet3d's voxel configs), and
# fail with "expected m1 and m2 to have the same dtype" after a voxel encoder
# with Linear layers (e.g. DynamicVFE); use fp32 for such models on CPU.
#
# Compose it from a config with ``presets = ['bf16']`` (optionally with one
# 'grad_accum_x*' preset), or pass ``--amp bf16`` to tools/train.py.
optim_wrapper = dict(type='BF16AmpOptimWrapper', dtype='bfloat16')
