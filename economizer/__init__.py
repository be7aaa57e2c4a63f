"""TokenEconomizer's controller, implemented: incremental state, bounded detector execution,
SQLite persistence per repository, no-model defaults for the four model calls, the same
calls asked of a real model (`model_client`: the SDKs, retries; `model_calls`: prompts and
answer schemas; `model_recording`: record and replay), and the outputs each harness
consumes. `economizer_spec` is the reference it must equal.
"""

from .controller import Controller
from .protocols import DigestMiningProposer, default_controllers, not_stuck, template_redirect

__all__ = ["Controller", "DigestMiningProposer", "default_controllers", "not_stuck", "template_redirect"]
