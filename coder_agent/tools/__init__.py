"""The model's tools: their shape, one module per tool, how a call runs, and the mechanisms they use.

calls         what a call is and returns (Prepared, Outcome, ToolResult), ToolError, the ToolSet protocol
tool          the shape of a tool (Tool), the base of the built-in ones (BuiltinTool), their params' base
context       ToolContext: what a tool may ask of its session (paths, files, commands, display)
registry      the built-in tools in order (one edit tool per model family), the session's MCP tools, their specs
executor      one call's lifecycle: announce, prepare, permit, run, report
read_file write_file edit_file apply_patch glob grep run_command fetch update_plan ask_user use_skill  the tools
sampling      an MCP server's sampling request, run as a call of its own
mcp_tool      an MCP server's tool as an agent tool
edit_checks   after an edit: the syntax errors it introduced, and the configured checker's findings
file_view     what read_file shows, the binary sniff, content hashes, middle truncation
webpage       a web page fetched at a checked address, as text
editing/      string-replacement edits and patches of a text, in memory, and their lenient line matching
search/       grep and glob that respect .gitignore, on ripgrep or in pure Python
"""
