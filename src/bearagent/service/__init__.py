"""The run lifecycle of one workspace: admission, sessions, planning, runs, children, session hooks, resume,
approvals, compaction, replay, the queue, leases and the worker (see docs/architecture.md)."""
