"""Attack: kill the process with status 0 while being imported."""
import os

os._exit(0)
