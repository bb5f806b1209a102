"""`python -m coder_agent`: the same entry point as the `coder-agent` console script."""

from coder_agent.cli import main

if __name__ == "__main__":
    main()
