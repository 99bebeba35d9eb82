"""Stand-in vLLM package: only the Mamba2 op files and what they import."""
