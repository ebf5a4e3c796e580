# Iteration-based one-cycle schedule of the small *_synthetic configs, tuned
# for 2 processes x 2 samples = 4 samples per iteration: 20 iterations per
# pass over the 80 generated training frames, 400 iterations = 20 passes.
lr = 2e-3
max_iters = 400
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=lr, weight_decay=0.01),
    clip_grad=dict(max_norm=35, norm_type=2))
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=0.1,
        by_epoch=False,
        begin=0,
        end=max_iters // 10),
    dict(
        type='CosineAnnealingLR',
        T_max=max_iters - max_iters // 10,
        eta_min=lr * 1e-2,
        by_epoch=False,
        begin=max_iters // 10,
        end=max_iters),
]
train_cfg = dict(
    type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
# The total batch size the LR above was tuned for (--auto-scale-lr).
auto_scale_lr = dict(enable=False, base_batch_size=4)
