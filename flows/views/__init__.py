"""Server-rendered pages, one module per page; `urls.py` wires them. Views only translate in and out."""
