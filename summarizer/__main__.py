"""`python -m summarizer …`: see summarizer.cli."""
import os
import sys

from summarizer.cli import main

try:
    code = main()
    sys.stdout.flush()
except BrokenPipeError:
    # The reader (e.g. `| head`) went away: that is not an error of ours. Point stdout at devnull so the
    # interpreter's final flush does not raise again.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = 0
raise SystemExit(code)
