"""Basil's schema migrations, one module per revision."""
