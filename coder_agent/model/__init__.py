"""The model side: provider-neutral turn types, credentials, and the litellm adapter (the only litellm importer)."""
