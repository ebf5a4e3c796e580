"""The demo of ``tools/quickstart.py`` (``make demo``): generated data, a
2-process training, evaluation, and the report with its bird's-eye view."""
