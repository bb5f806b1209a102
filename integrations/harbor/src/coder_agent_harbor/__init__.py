"""coder-agent on Harbor: `harbor run --agent-import-path coder_agent_harbor:CoderAgent -m provider/model`."""

from coder_agent_harbor.agent import CoderAgent, CoderAgentOptions, InstallFailed

__all__ = ["CoderAgent", "CoderAgentOptions", "InstallFailed"]
