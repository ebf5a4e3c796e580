"""A broken file costs one sample, not the run: a sample whose loading
fails (missing or truncated file, unreadable GT-database file, non-finite
points) is recorded and replaced by one chosen from its data position
(``replace.py``), the records gathered into ``<work_dir>/bad_samples.json``
(``records.py``); what failed, named by file and sample (``errors.py``).
``BadSampleHook`` (``engine/hooks``) turns it on and keeps the tolerance."""
