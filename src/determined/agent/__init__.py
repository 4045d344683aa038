"""The remote agent: ``python -m determined.agent --master URL`` registers this machine's
slots with a master and runs the trials and tasks it is given (see ``_agent``).
Processes are started with the shared leaf :mod:`determined._procs`."""
