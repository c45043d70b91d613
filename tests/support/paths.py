"""Where the checkout's files are, said once, so a test file may live at any depth under tests/."""

from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLES = PROJECT / "examples" / "notes"
TEST_DATA = PROJECT / "tests" / "data"
