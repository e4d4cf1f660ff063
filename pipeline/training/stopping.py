"""Why a model stopped: early stopping on validation MAP@R (pipeline/training/loop.py fit) ends a model `patience`
epochs after its best one; a model that stopped sooner after its best was cut by a cap (train.max_epochs,
ccp.max_subproblems, poc.max_epochs) while it might still have improved. The MLRC runs' budgets table
(pipeline/reporting/budgets.py) and the 2-D proof of concept (pipeline/studies/poc.py) judge it alike."""


def cut_while_improving(best_epoch: int, stop_epoch: int, patience: int) -> bool:
    """Stopped fewer than `patience` epochs after the best one, so by a cap, not by the patience."""
    return stop_epoch - best_epoch < patience
