"""Exports generated from the one knowledge base: the agent SOP (AGENTS.md), Mermaid and DOT
decision graphs, the knowledge graph as JSON, the reference index and a skill folder.

Every export is a pure function of the loaded knowledge (and a language): same knowledge, same
bytes. The CLI (``kb export ...``, ``kb refs``) lives in :mod:`kb.cli.export_cmd`.
"""

from kb.exports import agents_md, dot, graph_json, mermaid, refs, skill

__all__ = ["agents_md", "dot", "graph_json", "mermaid", "refs", "skill"]
