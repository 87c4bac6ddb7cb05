"""When a provider call fails: is it a context overflow, and what to do about it (compaction.md §4).

Owns the recognition of context-overflow errors and the bounded compact-and-retry loop (`overflow`), the codes
and sentences real providers use for "your prompt does not fit" (`overflow_patterns`), and retrying a summary
call with fallback to other models on retryable errors (`fallback`). The compacting itself is
`summarizer.compact`'s; the exceptions shared with it live in `summarizer.compact.errors`.
Import from the modules; the public names are exported by `summarizer` itself.
"""
