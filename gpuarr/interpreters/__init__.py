"""Interpreters over the Program IR: staging, automatic differentiation, batching."""
