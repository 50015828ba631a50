"""Where the shared real transcript samples are, and the skip for a clone without them.

The samples (real and third-party transcripts, with provenance and licences in their
MANIFEST.md) live in the `shared` folder beside the clone, outside the repository. They are read
in place and never copied in. A clone with nothing beside it still tests green: the tests on
these samples skip, and every format keeps its tests on the project's own synthetic transcripts
(`tests.fakes.transcripts`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_TRANSCRIPTS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "transcripts"

requires_shared_transcripts = pytest.mark.skipif(
    not SHARED_TRANSCRIPTS.is_dir(),
    reason=f"the shared transcript samples are not beside the clone ({SHARED_TRANSCRIPTS} is "
    "missing); the synthetic transcripts still cover every format",
)
