"""Tokens: counting them offline (tiktoken seeded from bundled files) and the model windows they must fit.

Owns the token counter and its per-message cache (`count`), the offline seeding of tiktoken's encoding files
(`encodings`) and the built-in model catalog with its data file (`catalog`, `data/models.json`).
Import from the modules; the public names are exported by `summarizer` itself.
"""
