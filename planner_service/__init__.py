"""scan-planner: a scan-planning service for Apache Iceberg tables."""

__version__ = "0.1.0"
