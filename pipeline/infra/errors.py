"""The base of every error a user can cause (bad params, data, weights...).

Stage CLIs (stages/_common.py) turn these into one line on stderr and exit code 2; importing this
module is cheap, so a stage that only dispatches work does not import torch.
"""


class PipelineError(Exception):
    """A problem the user can fix; the message is one line naming the key, file or class."""
