"""TokenEconomizer's controller, implemented: incremental state, bounded detector execution,
SQLite persistence per repository, no-model defaults for the four model calls, and the
outputs each harness consumes. `economizer_spec` is the reference it must equal.
"""

from .controller import Controller
from .protocols import DigestMiningProposer, default_controllers, not_stuck, template_redirect

__all__ = ["Controller", "DigestMiningProposer", "default_controllers", "not_stuck", "template_redirect"]
