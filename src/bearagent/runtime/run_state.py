"""The reducer's working state, now `bearagent.domain.run_state` (issue 30: `ports.py` names it, and the port sits
below the runtime). These names stay importable from here for the modules that already do."""

from __future__ import annotations

from bearagent.domain.run_state import ActivityState as ActivityState
from bearagent.domain.run_state import RunState as RunState
from bearagent.domain.run_state import canonical_id as canonical_id
from bearagent.domain.run_state import error_of as error_of
from bearagent.domain.run_state import iso as iso
from bearagent.domain.run_state import parse_time as parse_time
from bearagent.domain.run_state import trusted_model as trusted_model
