"""Driving the pipeline rather than computing in it: dvc.yaml's code deps from the stages' imports (dvc_deps) and
the fan-out of train stages over a cluster (fanout). No stage imports them, so editing them reruns nothing."""
