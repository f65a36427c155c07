"""Mnemetric's named options: one Hydra config group per folder, shipped inside the package.

The repository's top-level ``conf`` is this folder (a symbolic link), so `dvc exp run` composes it as
before; installed elsewhere, the ``mnemetric`` command and Hydra (``pkg://mnemetric.conf``, added by
Mnemetric's Hydra plugin) find the same options.
"""
