# Gradient accumulation x2: one optimizer step every 2 iterations, so each
# update sees 2 x the per-GPU batch (times the number of GPUs).
#
# Use when the batch size the schedule was tuned for does not fit in GPU
# memory: e.g. a config made for 8 GPUs x 4 samples, run on 2 GPUs x 4
# samples with x4 accumulation, makes updates from 32 samples again.
# Models with BatchNorm still normalise over the per-GPU batch, so results
# can differ slightly from a truly larger batch (a warning says so).
# Iteration-based schedules count iterations, not updates: multiply
# train_cfg.max_iters by 2 to keep the number of updates.
#
# Compose it from a config with presets = ['grad_accum_x2'] (optionally
# with one precision preset: 'fp16', 'fp16_dynamic' or 'bf16'), or pass
# --accum 2 to tools/train.py.
optim_wrapper = dict(accumulative_counts=2)
