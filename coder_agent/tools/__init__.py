"""The model-facing core of the file tools: pure text editing, file viewing and search, without ACP or permissions.

text_edit   apply exact (or, when unique, whitespace-tolerant) string edits to a file's text in memory
file_view   the text read_file shows the model, binary/UTF-8 checks, content hashes, middle truncation
search      grep and glob that respect .gitignore, on ripgrep when there is one, else in pure Python
"""
