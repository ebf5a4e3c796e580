"""Names every part of the plugin shares, defined once."""
from pathlib import Path

#: Module name of the plugin, as configs import it (``custom_imports``).
PLUGIN_MODULE = __name__.rpartition('.')[0]
#: Folder of the plugin package.
PLUGIN_DIR = Path(__file__).resolve().parent
#: The checkout that holds the plugin, ``configs/`` and ``requirements/``.
REPO_ROOT = PLUGIN_DIR.parents[1]
#: The ten nuScenes detection classes, in the order of mmdet3d's configs.
NUSCENES_CLASSES = ('car', 'truck', 'construction_vehicle', 'bus', 'trailer',
                    'barrier', 'motorcycle', 'bicycle', 'pedestrian',
                    'traffic_cone')
#: The config line that imports the plugin.
CUSTOM_IMPORTS = (f"custom_imports = dict(imports=['{PLUGIN_MODULE}'], "
                  'allow_failed_imports=False)')
#: File that a failed distributed run's root-cause report is written to,
#: inside the work dir (the launchers print the same report last).
FAILURE_REPORT_NAME = 'failure_report.json'
#: File that ``DistWatchdogHook`` writes when it finds a hang (in the
#: runner's ``log_dir``).
HANG_REPORT_NAME = 'hang_report.txt'
#: How the message in a rank's torch elastic error file starts when
#: ``DistWatchdogHook`` ended the rank because of a hang.
HANG_MESSAGE_PREFIX = 'DistWatchdogHook: hang'
#: Exit status of a rank that ``DistWatchdogHook`` ended (EX_TEMPFAIL).
HANG_EXIT_CODE = 75
#: Environment variable that overrides oneDNN's answer to "does this CPU run
#: bfloat16 natively": 'native' or 'emulated' (unset: oneDNN decides).
CPU_BF16_ENV = 'MMDET3D_PLUGIN_CPU_BF16'
#: Exit status of every rank of a run that a preemption signal (SIGTERM, or
#: the one the config names) stopped after the checkpoint of its last
#: iteration was saved (``PreemptionHook``); ``tools/slurm_train.sh``
#: requeues its job on it.
PREEMPTED_EXIT_CODE = 85
#: ``--amp`` choices of tools/train.py and the preset each one applies. A
#: bare ``--amp`` means 'fp16' (dynamic loss scale), as in mmdet3d.
AMP_FLAG_PRESETS = {
    'fp16': 'fp16_dynamic',
    'fp16-static': 'fp16',
    'bf16': 'bf16',
}
#: ``--amp fp32``: train (or test) in float32 whatever the config sets.
FP32_FLAG = 'fp32'
#: Every ``--amp`` choice of tools/train.py and the doctor.
AMP_CHOICES = (*AMP_FLAG_PRESETS, FP32_FLAG)
#: Training iterations of the demo: the config's 400-iteration one-cycle
#: schedule stretched to 450 (after 400, mAP was 0.56-0.60 on two seeds,
#: close to the 0.55 the demo should always reach; 500 took over the demo's
#: 6-minute budget on a fresh clone).
DEMO_ITERS = 450
#: File ``tools/dist_run.py`` writes into the log folder when ranks fail:
#: torchrun's record of each failed rank (read by the failure report).
EXIT_STATUS_NAME = 'exit_status.json'
#: The config's ``gt_database_draws`` under exact resume: ``'per_sample'``,
#: each sample's GT-database objects drawn from its own random state (the
#: same objects on resume); ``'stock'``, mmdet3d's draws (each class's
#: shuffled list, walked on by every sample a worker loads: a resume inside
#: an epoch draws other objects).
GT_DRAWS = ('per_sample', 'stock')
#: mmdet3d's command that (re)creates the info files and GT database of a
#: nuScenes root (``{root}``); the data checks name it as the fix.
CREATE_DATA_CMD = ('python tools/create_data.py nuscenes --root-path {root} '
                   '--out-dir {root} --extra-tag nuscenes')
