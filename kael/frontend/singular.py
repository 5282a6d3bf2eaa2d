"""(Being written.)"""

LINALG: dict = {}
FUNCTIONS: dict = {}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict = {}
