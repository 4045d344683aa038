"""Programs the master runs as tasks (``python -m determined.tasks.<name>``).

- :mod:`~determined.tasks.shell`: an interactive terminal (a real PTY) over a websocket.
- :mod:`~determined.tasks.tensorboard`: TensorBoard over trials' synced event files.
"""
