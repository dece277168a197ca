"""Code the test modules share (servers, builders, payloads). Test modules import from here, never
from one another or from conftest.py (tests/test_layout.py checks); fixtures stay in conftest.py."""
