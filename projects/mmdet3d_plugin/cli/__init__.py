"""What the tools call: their flags, the one way a run is prepared
(:func:`.prepare.prepare_run`), the train / test entry points, the error
printer and find-unused."""
