import sys
from pathlib import Path

# Tests import their helpers (tests/kernel_helpers.py) by module name.
sys.path.insert(0, str(Path(__file__).parent))
