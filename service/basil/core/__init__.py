"""The pure BASIL decision core: workload and device models, the load balancer, initial placement.

Nothing here imports pyVmomi, Flask, SQLAlchemy or APScheduler: strategies take a snapshot of plain
data and return a plan (``tests/test_purity.py`` keeps it that way).
"""
