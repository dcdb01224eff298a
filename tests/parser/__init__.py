"""Tests of hudisql.parser: grammar forms, errors, splitting, the pass-through corpus."""
