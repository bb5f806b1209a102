"""Places of their own for isolated sub-agents: git worktrees on scratch branches, or copy-on-write copies of folders
that are not repositories (`workplace`, `copying`), the agent's private folder for them and the sweep of what an agent
that died left there (`places`), the one git they run (`git`), and three-way merges of one file (`merge`)."""
