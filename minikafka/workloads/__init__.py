"""Workloads the fault suites share: applications of the project's clients, run by both the simulation and the live fault suite."""
