"""The agent: sessions' life (`manager`), their turns (`runner`, `turn`), slash commands, compaction, and what the
model is told about the workspace."""
