"""The studies around the runs: MLRC's tuning step (tuning), the ablations (ablation) and CCP's 2-D proof of
concept (poc). Imports nothing itself."""
