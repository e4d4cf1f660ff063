"""Training a run: the loop with early stopping on validation MAP@R (loop), why a model stopped (stopping), the
GPU's graphed steps (cuda_graphs), one model per fold and seed (experiment, jobs, worker), the exact Adam step
(exact_adam), the tuning pruner's rule (pruning). A run's name and setup are pipeline/runs.py, its batches
pipeline/batching. Imports nothing itself, so that a module here imports only what it uses."""
