# Activation checkpointing: the model's parts keep only their inputs in the
# forward and recompute their activations in the backward, one part at a
# time, so a step's peak memory holds the activations of one part instead
# of all of them. Results are unchanged: the same loss and gradients,
# BatchNorm statistics updated once per step, the same random draws
# (projects/mmdet3d_plugin/engine/activation_checkpointing).
#
# Use when a config's batch does not fit a GPU's memory
# (tools/doctor.py CONFIG --gpu-memory 16G measures the peak with and
# without it). Measured on the CPU, full-size CenterPoint voxel0075 at
# batch 4: live tensor peak 0.48x, step time 1.18x
# (benchmarks/bench_activation_checkpointing.py).
#
# 'auto' checkpoints, by class, the parts of mmdet3d's LiDAR detectors
# (AUTO_PARTS in engine/activation_checkpointing/checkpointing.py): each
# PillarFeatureNet layer, SparseEncoder's input convolution and first
# stage, each SECOND block, the SECONDFPN neck, CenterHead's shared
# convolution and each task head.
# Choose the modules yourself with a list of names, where * stands for one
# part of a name:
#   --cfg-options \
#       activation_checkpointing="['pts_neck','pts_bbox_head.task_heads.*']"
#
# Compose it from a config with presets = ['activation_checkpointing']
# (with any other presets). mmengine's own key, a list of module names,
# goes through the same implementation under the plugin's runner.
activation_checkpointing = 'auto'
