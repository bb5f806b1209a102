"""The sandbox: OS-enforced walls around the commands the agent runs (placeholder docstring, completed below)."""
