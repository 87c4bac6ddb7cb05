"""The chain: canonical messages and PentAGI's chain AST, parsed, repaired and edited.

Owns what a chain is and how it may be changed: message validation, sizes and text (`messages`), the AST nodes
with their byte sizes and lineage (`nodes`), strict and force parsing (`parse`), the AST helpers PentAGI uses
around summarization (`ops`), tool-call argument repair (`sanitize`), tool-call id templates (`toolcall_ids`)
and where an agent turn ends (`turns`). Nothing here summarizes; the passes and the window fit build on it.
Import from the modules; the public names are exported by `summarizer` itself.
"""
