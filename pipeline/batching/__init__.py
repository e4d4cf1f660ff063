"""How a batch is drawn and shared between processes, below the methods that choose its classes and the training
loop that draws it: samplers.py (class-balanced batches with their own seeded generator), distributed.py (torchrun /
DDP: a global batch sharded over ranks, the loss and miner wrappers, averaged objective parameters)."""
