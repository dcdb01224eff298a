"""The hudisql SQL dialect: script splitting, statement classification, typed commands.

Imports nothing but sqlglot. Statements that are not hudisql's pass to Spark as their
original text, byte for byte.
"""
