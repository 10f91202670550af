"""What is stuck cluster-wide and why: reads only (its port has no write verb), judges from
the evidence the cluster holds, returns a ScanReport. Never writes, never prints."""
