"""Readers for text that no single tool format describes: the general incident reader
(:mod:`kb.readers.incident`) and its helpers (regions, launch commands and argument dumps,
environment lines and reports, message signatures), and gzip input (:mod:`kb.readers.gz`)."""
