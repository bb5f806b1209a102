"""The model's tools: their types, the built-in tools, how a call runs, and the mechanisms they use.

base        the Tool and ToolSet protocols, Prepared, ToolError
builtin     the built-in tools (read_file, write_file, edit_file, glob, grep, run_command, fetch, update_plan)
executor    one call's lifecycle: announce, prepare, permit, run, report
mcp_tools   the tools of MCP servers, as agent tools
files       reads and writes, through the editor or on disk
shell       run_command, in the editor's terminal or as a local process
fetch       a web page as text
file_view   what read_file shows, the binary sniff, content hashes, middle truncation
editing/    string-replacement edits of a text, in memory
search/     grep and glob that respect .gitignore, on ripgrep or in pure Python
"""
