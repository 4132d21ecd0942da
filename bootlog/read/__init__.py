"""Where bytes come from and how they are cut into records: sources (file, gzip, stdin, a
container), podman, the envelope (timestamps, CRI, docker json, journald), the literal scan."""
