"""The MCP host: tools from MCP servers, for the app's chat and ``hearth mcp``.

Qt-free and runtime-free (no ``ui``, ``server`` or ``engine``): the chat drives the tool
loop on the GUI's side and asks the user; this package owns the configuration
(``mcp.json``, in the ``mcpServers`` format of Claude Desktop, Cursor and LM Studio) and
the servers' lifecycle (started on demand, stopped when idle, a timeout per call).
"""

from hearth.tools.mcp_config import (
    McpConfig,
    McpConfigError,
    McpServerEntry,
    default_config_path,
    load_config,
    parse_config,
)
from hearth.tools.mcp_host import (
    McpHost,
    ServerState,
    ServerStatus,
    ToolCallError,
    ToolInfo,
    ToolResult,
)
from hearth.tools.permissions import Permission, ToolPermissions, ToolPermissionsError

__all__ = [
    "McpConfig",
    "McpConfigError",
    "McpHost",
    "McpServerEntry",
    "Permission",
    "ServerState",
    "ServerStatus",
    "ToolCallError",
    "ToolInfo",
    "ToolPermissions",
    "ToolPermissionsError",
    "ToolResult",
    "default_config_path",
    "load_config",
    "parse_config",
]
