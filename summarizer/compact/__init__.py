"""Fitting a view into the model's window (compaction.md): plan, window cut, truncation, pruning, checkpoints.

Owns the fit and manual compaction (`fit`) with the pure arithmetic behind its decisions (`plan`); step b,
the window cut (`window_cut`), with where a cut may fall (`cutpoints`); step c, head + tail truncation of tool
results (`truncate`); per-request pruning of old tool results (`prune`); the checkpoint summary a cut writes:
its prompt and summary message (`prompt`), the writer with chunking, retries and fail-closed rules
(`summary_writer`), its deterministic suffix (`summary_suffix`) and the quality gate (`audit`); the check
every returned view passes (`validate_view`); pluggable compaction providers (`providers`); and the
exceptions of this layer (`errors`).
Import from the modules; the public names are exported by `summarizer` itself.
"""
