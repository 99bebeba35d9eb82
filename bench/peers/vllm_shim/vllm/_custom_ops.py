"""vLLM's compiled ops are absent: only selective_scan_fwd (Mamba1) is named,
and the Mamba2 ops never call it."""
