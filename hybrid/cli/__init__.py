"""The commands: every ``python -m hybrid.<name>`` lives here as ``hybrid/cli/<name>.py`` (its ``main``).

``hybrid/<name>.py`` is only the entry point that ``python -m`` finds (it imports ``main`` from here);
library code lives in the packages below this layer, never here.
"""
