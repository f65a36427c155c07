"""Mnemetric's Hydra plugin, found by Hydra's plugin discovery (``hydra_plugins`` namespace package).

DVC's ``dvc exp run`` composes conf/ with Hydra's compose API after loading plugins, so this module
is imported there too. It (1) registers Mnemetric's run schema in Hydra's ConfigStore (the sections
every family of the packaged ``benchmark`` conf group declares), so a mistyped value
(``-S retrieval.context_k=abc``) stops composition naming its key, and (2) adds Mnemetric's
named options shipped inside the package (``pkg://mnemetric.conf``) to the search path, so any project
with mnemetric installed can choose ``memory=bm25-upstream`` or ``judge=upstream-gpt-4o`` and add its
own options in its own conf/.
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from mnemetric.schema import register_schema

register_schema(if_absent=True)  # a composition already under way registered its conf's schema


class MnemetricSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="mnemetric", path="pkg://mnemetric.conf")
