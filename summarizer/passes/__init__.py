"""PentAGI's chain summarization: the three passes, the prompts they send and the entry points that run them.

Owns stages A, B and C as sans-IO generators (`stages`), the two shapes a summary takes in a chain (`shapes`),
the text sent to the summarizer model and the system prompts the backends send with it (`prompts`), the sync and
async drivers (`summarize`; their bookkeeping `ChainRun` is shared with `summarizer/strategy/`), PentAGI's chain
re-use paths, restore and provider switch (`restore`), and what PentAGI's summary handler keeps around the model
call: input cap and cache (`handler`).
Import from the modules; the public names are exported by `summarizer` itself.
"""
