"""glrmask as a vLLM structured-output backend: `vllm serve MODEL --structured-outputs-config.backend glrmask`.

Importing this package registers the backend (`plugin.register`), which offline `LLM(...)` needs: it builds its
config before vLLM loads plugins. `vllm serve` loads it through the `vllm.general_plugins` entry point.
"""

from .plugin import NAME, VllmVersionError, register

register()

__all__ = ["NAME", "VllmVersionError", "register"]
