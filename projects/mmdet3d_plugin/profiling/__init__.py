"""Where a train pipeline's time goes (``tools/profile_pipeline.py`` and
the doctor's ``data.throughput``): each transform timed where it runs
(``timing``), the steady state of one worker on one core (``steady``,
``one_core``), a fresh worker's start-up (``worker_start``), the workers
that feed a GPU (``feed``), the train dataset built as training builds it
(``dataset``), the whole measurement (``pipeline``), its table and JSON
(``pipeline_profile``), and the tool's flags and run (``tool``)."""
