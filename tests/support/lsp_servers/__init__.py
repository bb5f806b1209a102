"""Real language servers for the tests of `coder_agent.lsp`, built with pygls (the library a server author would
use), each a script run as `python SCRIPT`."""

from pathlib import Path

MARKED = Path(__file__).with_name("marked.py")
