"""Reasoning tests: explain, next checks, chains, triage, verify, symptom text."""
