"""The offline summarizer: a briefing built only from lines of its input (no model, no network, deterministic).

Owns the summarizer itself and its layout (`briefing`), the reading of a summary prompt back into entries
(`entries`), what a line carries: signal, outcome, later references, findings, noise (`facts`), the ranking of
entries into briefing lines (`collect`), which identifiers a summary lists and in which order (`ranking`:
by use, random-looking ones nobody used last), the briefing's sections and how an earlier summary merges into them
(`sections`), and the ledger of audited findings and identifiers appended to a model's summary (`ledger`),
which reuses the same reading so both backends keep the same facts, and the retention score of a compaction
(`retention`): the share of the replaced messages' findings and identifiers the new view still carries.
Import from the modules; the public names are exported by `summarizer` itself.
"""
