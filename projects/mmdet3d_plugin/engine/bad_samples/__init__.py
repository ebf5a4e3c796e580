"""A broken file costs one sample, not the run: a sample whose loading
fails (missing or truncated file, unreadable GT-database file, non-finite
points) is recorded and replaced by one chosen from its data position
(``replace.py``, called from ``engine/resume/seeded_items.py``), the records
gathered into ``<work_dir>/bad_samples.json`` (``records.py``); what
failed, named by file and sample (``errors.py``). ``BadSampleHook``
(``bad_sample_hook.py``) turns it on and keeps the tolerance;
``tools/train.py`` adds it to every training run
(``engine/run_defaults.py``)."""
