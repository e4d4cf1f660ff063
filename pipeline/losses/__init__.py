"""Loss construction: pytorch-metric-learning losses configured as the papers use them."""
