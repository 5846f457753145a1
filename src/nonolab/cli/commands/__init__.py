"""Sub-commands of the ``nonolab`` CLI: each module defines ``register(subparsers)``."""
