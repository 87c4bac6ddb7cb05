"""Agent transcript formats: reading and writing chains as OpenAI messages, PentAGI msgchains or OpenClaw JSONL.

Owns format detection, the openai and pentagi importers and exporters and the `import_chain` / `export_chain`
dispatch (`convert`), the OpenClaw / pi session JSONL format (`openclaw`), and the errors and canonical-message
helpers both share (`common`; its underscore helpers are private to this folder).
Import from the modules; the public names are exported by `summarizer` itself.
"""
