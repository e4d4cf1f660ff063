"""Training a run: its name and record (runs), the batches (samplers), the loop with early stopping on validation
MAP@R (loop) and its GPU paths (cuda_graphs, distributed), one model per fold and seed (experiment, jobs, worker).
Imports nothing itself, so that a module
here imports only what it uses."""
