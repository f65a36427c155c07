"""pytest plug-in: registers the ``task`` marker (``--strict-markers`` refuses unregistered ones).

``@pytest.mark.task("longmemeval", "multi-session")`` says that a test exercises an upstream task of
the inventory (family = benchmark name in lower case: longmemeval, longmemeval-v2; task = the task
name as in data/inventory/upstream-task-inventory.json). mnemetric.custody.task_markers reads these
markers with ast to fill the inventory's test_refs; the marker changes nothing at run time.
Enable for the whole suite with ``pytest_plugins = ["tests.inventory_markers"]`` in tests/conftest.py.
"""

from __future__ import annotations

MARKER = "task(family, task): the upstream task this test exercises (read into the task inventory's test_refs)"


def pytest_configure(config) -> None:
    if MARKER not in config.getini("markers"):
        config.addinivalue_line("markers", MARKER)
