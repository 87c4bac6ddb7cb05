"""When the summarizer runs: the window-aware strategy beside PentAGI's byte budgets.

Owns the window strategy (`window`: PentAGI's passes only when the view would not fit the model's window, and
only as much as restores the margin) and its bounded summarizer input with the ledger of what was left out
(`bounded`). It drives the passes of `summarizer/passes/` and takes the ledger from `summarizer/extractive/`;
nothing in the engine imports it back. Import from the modules; the public names are exported by `summarizer`.
"""
