"""Fixes for today's torch / mmengine / mmdet3d stack, all in one place.

Each module names the upstream problem it works around and when it can go;
:mod:`.inventory` lists them, with everything else in the plugin that relies
on private upstream behaviour, and the versions each was reviewed against;
:mod:`.upstream_checks` holds what the tests compare with the installed
packages for each entry. Applied once, by :func:`.fixes.apply_fixes` when
the plugin registers its classes
(``projects.mmdet3d_plugin.registration.register_plugin``); importing this
package applies nothing; nothing here edits files of another package on
disk or changes numpy or torch globally.

1. ``checkpoints``: weights-only ``torch.load`` of mmengine checkpoints
   (torch >= 2.6, mmengine #1655).
2. ``cpu_dist``: DDP on a CPU-only torch (mmengine #1460).
3. ``spconv_cpu``: spconv's backward without CUDA.
4. ``dbsampler``: ``ObjectSample`` / ``DataBaseSampler`` on numpy >= 1.24
   (mmdet3d #2821); switchable.
5. ``centerhead_init``: CenterPoint's heatmap bias starts at ``init_bias``
   (mmdet3d #1554); switchable.
6. ``nuscenes_class_names``: the devkit's ``DetectionConfig`` with
   ``class_names`` as a list, which pickles (nuscenes-devkit 1.2.0); the
   dataset and the metric hold it (not applied at import).
7. ``restart_store``: process groups of a torchrun restart that do not
   read the keys of the attempt before (applied by the launch code, not at
   import).
8. ``config_text``: mmengine's config text formatted by yapf once per
   content, not at every dump, log and checkpoint.

9. ``torch_api``: torch APIs newer than torch 2.1 that the plugin calls,
   with the same result on every supported torch (2.1.2 to 2.13): the
   gradients' total norm, whether a CPU GradScaler exists, NCCL's setting
   names (not applied at import: called where used).

Not workarounds: ``python_fork`` names the Pythons whose forked workers
can deadlock (CPython gh-112275), for the doctor and ``tools/train.py``;
``stacks`` holds the stacks the suite ran on and the known bad ones, for
the doctor's ``env.stack``.

The upstream errors the plugin knows without working around them are rows
of the cause table, ``failures.causes.KNOWN_ERRORS``.
"""
