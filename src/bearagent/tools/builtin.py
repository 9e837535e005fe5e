"""The native tool set, as the NativeToolRegistry builds it."""

from __future__ import annotations

from bearagent.ports import Tool
from bearagent.tools.bash import BashTool
from bearagent.tools.bash_output import BashOutputTool
from bearagent.tools.edit import EditTool
from bearagent.tools.glob_files import GlobTool
from bearagent.tools.grep import GrepTool
from bearagent.tools.kill_shell import KillShellTool
from bearagent.tools.ls import LSTool
from bearagent.tools.multi_edit import MultiEditTool
from bearagent.tools.names import NATIVE_TOOL_NAMES as NATIVE_TOOL_NAMES
from bearagent.tools.notebook_edit import NotebookEditTool
from bearagent.tools.notebook_read import NotebookReadTool
from bearagent.tools.read import ReadTool
from bearagent.tools.todo_write import TodoWriteTool
from bearagent.tools.web_fetch import WebFetchTool
from bearagent.tools.web_search import WebSearchBackend, WebSearchTool
from bearagent.tools.write import WriteTool


def native_tools(*, web_search: WebSearchBackend | None = None) -> list[Tool]:
    """Every native tool. `WebSearch` uses `web_search` (a plugin's backend) when given, else the service the user
    configured (`web_search:` in config.yaml)."""
    tools: list[Tool] = [
        ReadTool(),
        WriteTool(),
        EditTool(),
        MultiEditTool(),
        LSTool(),
        GlobTool(),
        GrepTool(),
        NotebookReadTool(),
        NotebookEditTool(),
        BashTool(),
        BashOutputTool(),
        KillShellTool(),
        WebFetchTool(),
        TodoWriteTool(),
        WebSearchTool(web_search),
    ]
    return tools
