"""``python -m platinum_jax.cli``: the same as the ``platinum-jax`` command."""

import sys

from platinum_jax.cli import main

if __name__ == "__main__":  # importing this module (as a package walk does) runs nothing
    sys.exit(main())
