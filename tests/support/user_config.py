"""The user config every test starts with (no imports: `tests/conftest.py` reads it before the test modules load)."""

LANGUAGE_SERVERS_OFF = "[lsp]\nenabled = false\n"
"""Language servers off: one found on PATH (basedpyright is a dev dependency) would otherwise check every agent's
edits in the suite; the tests of `lsp` turn them on."""
