"""What a running service holds: its runtime (settings, storage, catalogs, the planner and its caches), the
plan-result cache and plan ids, the REST plans kept for their clients, and the scan reports it publishes."""
