"""The engine's settings: each declared once, and the frozen config the passes read.

Owns the declarations of PentAGI's eight summarizer settings with the parsers their values go through
(`spec`: `SettingSpec`, `SUMMARIZER_SETTINGS`, `parse_bool`) and `SummarizerConfig` with PentAGI's three
profiles and environment variables (`config`). The CLI and the dashboard read the same declarations.
Import from the modules; the public names are exported by `summarizer` itself.
"""
