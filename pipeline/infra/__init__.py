"""Infrastructure: files, downloads, processes, devices, git, DVC deps and the cluster fan-out; nothing here
knows about metric learning."""
