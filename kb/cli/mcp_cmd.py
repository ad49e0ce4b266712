"""`kb mcp`: serve the knowledge base to AI agents over the Model Context Protocol (stdio)."""

from __future__ import annotations

from kb.engine.errors import KbError
from kb.cli.common import handle_errors


@handle_errors
def mcp() -> None:
    """Run an MCP server over stdio (tools: diagnose, next_checks, explain_cause, list_causes,
    search_references, parse_artifact). Needs the extra: pip install 'kb[mcp]'."""
    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        raise KbError("kb mcp", "the MCP SDK is not installed",
                      "Install the extra: pip install 'kb[mcp]'") from None
    from kb.mcp_server import serve

    serve()
