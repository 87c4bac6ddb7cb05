"""`python -m summarizer …`: see summarizer.cli."""
from summarizer.cli import main

raise SystemExit(main())
